#pragma once
// HlsStore: the HLS output of one worker, in memory — per StreamKey (app and name) a live media
// playlist (protocol::HlsPlaylist) and its finished MPEG-TS segments as immutable shared buffers.
// The segmenter of a published stream adds segments; the HTTP handler serves the playlist and the
// segments by reference (1000 clients of one segment share one buffer; nothing is copied).
//
// The state of a stream outlives its Stream object and its publisher:
//  * A segment that slides out of the playlist stays fetchable for its duration plus the duration
//    of the playlist that last listed it (RFC 8216 §6.2.2), then it is freed.
//  * When the publisher leaves, the playlist ends (EXT-X-ENDLIST, §4.3.3.4) and the whole state
//    is kept for a grace period: a publisher coming back within it continues the media sequence
//    (EXT-X-MEDIA-SEQUENCE never goes backwards, §6.2.2) after an EXT-X-DISCONTINUITY (§4.3.2.3);
//    after the grace the state is dropped and the playlist answers 404.
// Memory per stream is therefore bounded by about (2 x window + 1) segments while live (window
// + retained + the one being built), each at most hls.max_segment_size.
//
// Knows no socket and no clock but the TimerQueue. One worker thread; no locks.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <spdlog/logger.h>

#include "rill/config/config.h"
#include "rill/core/buffer.h"
#include "rill/core/timer_queue.h"
#include "rill/media/stream_key.h"
#include "rill/protocol/hls_playlist.h"

namespace rill::media {

// One finished segment.
struct HlsSegment {
  uint64_t sequence = 0;
  double duration_s = 0;
  BufferRef data;        // whole 188-byte TS packets, starting with PAT and PMT; never modified
  bool retired = false;  // slid out of the playlist; freed at expire_ms
  int64_t expire_ms = 0;
};

struct HlsStreamStats {
  uint64_t segments_produced = 0;  // added since the state was created
  uint64_t segments_expired = 0;   // freed after §6.2.2 retention (or past kMaxRetained)
  size_t segments_held = 0;        // listed + retained
  size_t segments_retained = 0;    // left the playlist, still fetchable
  size_t bytes_held = 0;
  uint64_t media_sequence = 0;     // EXT-X-MEDIA-SEQUENCE now
  bool live = false;               // a producer (publisher) is attached
};

struct HlsStoreStats {
  size_t streams = 0;
  size_t live_streams = 0;
  size_t segments = 0;  // held (listed + retained)
  size_t bytes = 0;     // held
  uint64_t segments_produced = 0;
  uint64_t segments_expired = 0;
};

// The HLS state of one stream (what the HTTP handler reads).
class HlsStreamState {
 public:
  HlsStreamState(StreamKey key, const config::HlsConfig& cfg);
  const StreamKey& key() const { return key_; }
  const std::string& app() const { return key_.app; }
  const std::string& name() const { return key_.name; }
  // The playlist text (rendered once per change and shared).
  BufferRef playlist_text() const;
  // How many times playlist_text() was read (HTTP and worker-link readers): an edge pull counts
  // HLS viewers as activity by it, whichever worker they reach.
  uint64_t playlist_reads() const { return playlist_reads_; }
  bool has_segments() const { return !playlist_.state().segments.empty(); }
  const protocol::HlsPlaylist& playlist() const { return playlist_; }
  // A segment that is listed or still retained, or nullptr (expired or never produced).
  const HlsSegment* segment(uint64_t sequence) const;
  // Seconds a client or cache may keep a segment (Cache-Control: max-age): the playlist
  // duration plus one target duration, so at least as long as the segment stays fetchable
  // for a client that saw it listed.
  uint32_t segment_max_age_s() const;
  // Total EXTINF duration of the playlist, seconds.
  double playlist_duration_s() const;
  bool live() const { return producers_ > 0; }
  HlsStreamStats stats() const;

 private:
  friend class HlsStore;
  StreamKey key_;
  std::string key_text_;  // "app/name", for logs
  config::HlsConfig cfg_;
  protocol::HlsPlaylist playlist_;
  // Contiguous by sequence: front() is the oldest still held (retired ones first).
  std::deque<HlsSegment> segments_;
  size_t retired_ = 0;  // how many of segments_ (at the front) left the playlist
  size_t bytes_ = 0;
  int producers_ = 0;
  uint64_t produced_ = 0, expired_ = 0;
  std::optional<TimerId> expiry_timer_;  // fires when segments_.front() (retired) expires
  std::optional<TimerId> grace_timer_;   // drops the state (no producer)
  mutable BufferRef playlist_cache_;
  mutable uint64_t playlist_reads_ = 0;
};

class HlsStore {
 public:
  HlsStore(TimerQueue& timers, spdlog::logger& log);
  ~HlsStore();  // cancels its timers; buffers still being sent stay alive by their own refs
  HlsStore(const HlsStore&) = delete;
  HlsStore& operator=(const HlsStore&) = delete;

  // ---- producer side (HlsSegmenter) ----
  // A publisher starts producing `key`. A state kept from an earlier publisher (within the
  // grace) is revived: the ENDLIST goes away and the next segment carries a discontinuity.
  void open(const StreamKey& key, const config::HlsConfig& cfg);
  // Appends a finished segment to the playlist of an open stream; returns its sequence number
  // (or nothing when the stream is not open). Segments that slide out are retained (§6.2.2).
  std::optional<uint64_t> add_segment(const StreamKey& key, BufferRef data, double duration_s,
                                      bool discontinuity);
  // The producer left: the playlist ends, the state is dropped after grace_ms().
  void close(const StreamKey& key);

  // ---- reader side (HTTP) ----
  const HlsStreamState* find(const StreamKey& key) const;
  // For the HTTP routes, which hold the two names apart.
  const HlsStreamState* find(const std::string& app, const std::string& name) const {
    return find(StreamKey{app, name});
  }

  HlsStoreStats stats() const;
  size_t size() const { return streams_.size(); }
  // How long an ended state is kept: max(30 s, 2 x window x fragment, 2 x segment max-age).
  static int64_t grace_ms(const HlsStreamState& st);
  // At most this many segments are retained after leaving the playlist, whatever their expiry
  // time: a publisher pushing faster than real time would otherwise pile them up (in real time
  // about window + 1 are retained).
  static size_t max_retained(const HlsStreamState& st) { return 2 * static_cast<size_t>(st.cfg_.window) + 2; }

 private:
  HlsStreamState* find_mut(const StreamKey& key);
  void retire(HlsStreamState& st, uint64_t sequence, int64_t expire_ms);
  void schedule_expiry(HlsStreamState& st);
  void expire(const StreamKey& key);
  void pop_retired(HlsStreamState& st);
  void drop(const StreamKey& key);
  void cancel_timers(HlsStreamState& st);

  TimerQueue& timers_;
  spdlog::logger& log_;
  std::map<StreamKey, std::unique_ptr<HlsStreamState>> streams_;
};

}  // namespace rill::media
