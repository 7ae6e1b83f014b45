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
#include <spdlog/logger.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rill/config/config.h"
#include "rill/core/buffer.h"
#include "rill/core/stream_log.h"
#include "rill/core/timer_queue.h"
#include "rill/media/stream_key.h"
#include "rill/protocol/hls_delivery.h"
#include "rill/protocol/hls_playlist.h"

namespace rill::media {

// One finished segment.
struct HlsSegment {
  uint64_t sequence = 0;
  double duration_s = 0;
  BufferRef data;        // whole 188-byte TS packets, starting with PAT and PMT, or (fMP4) moof +
                         // mdat; never modified
  uint64_t init_id = 0;  // fMP4: the init section it needs (HlsStreamState::init)
  protocol::HlsSegmentForm form = protocol::HlsSegmentForm::Ts;  // SEQ.ts or SEQ.m4s
  bool retired = false;  // slid out of the playlist; freed at expire_ms
  int64_t expire_ms = 0;
};

// One LL-HLS part (RFC 8216bis §4.4.4.9): moof + mdat, also part of its segment's bytes.
struct HlsPart {
  uint64_t index = 0;  // part-INDEX.m4s: counts every part of the stream
  uint64_t msn = 0;    // the segment it belongs to
  BufferRef data;
};

struct HlsStreamStats {
  uint64_t segments_produced = 0;  // added since the state was created
  uint64_t segments_expired = 0;   // freed after §6.2.2 retention (or past kMaxRetained)
  size_t segments_held = 0;        // listed + retained
  size_t segments_retained = 0;    // left the playlist, still fetchable
  size_t bytes_held = 0;
  uint64_t media_sequence = 0;  // EXT-X-MEDIA-SEQUENCE now
  bool live = false;            // a producer (publisher) is attached
};

// What a multivariant playlist says of a stream as a rendition (docs/abr.md), from its segmenter:
// the RFC 6381 codecs of its tracks, picture size (0: not known, HEVC) and measured frame rate.
struct HlsRenditionTraits {
  std::string codecs;
  uint32_t width = 0, height = 0;
  double frame_rate = 0;
  bool operator==(const HlsRenditionTraits&) const = default;
};

// LL-HLS: the URIs of the other renditions of key's group, for its EXT-X-RENDITION-REPORT tags
// (none when key is no rendition).
std::vector<std::string> rendition_report_uris(const StreamKey& key, const config::HlsConfig& cfg);

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
  // protocol::hls_target_duration() of the playlist, kept with its text (a live playlist's
  // Cache-Control is computed from it for every reload; it only changes with the playlist).
  uint32_t target_duration() const;
  // How many times playlist_text() was read (HTTP and worker-link readers): an edge pull counts
  // HLS viewers as activity by it, whichever worker they reach.
  uint64_t playlist_reads() const { return playlist_reads_; }
  bool has_segments() const { return !playlist_.state().segments.empty(); }
  const protocol::HlsPlaylist& playlist() const { return playlist_; }
  // A segment that is listed or still retained, or nullptr (expired or never produced).
  const HlsSegment* segment(uint64_t sequence) const;
  // fMP4: an init section still needed by a held segment (or the current one), or nullptr.
  const BufferRef* init(uint64_t id) const;
  bool fmp4() const { return cfg_.container == config::HlsContainer::Fmp4; }
  bool low_latency() const { return cfg_.low_latency; }
  // LL-HLS: a delta update (§6.2.5.1), rendered for each request.
  std::string playlist_text_skipping() const { return playlist_.render(true, rewind_view()); }
  // hls.rewind: the recorded segments held (a few dozen bytes each), oldest first.
  size_t rewind_segments() const { return rewind_.size(); }
  std::span<const protocol::HlsRecordedSegment> rewind_view() const { return rewind_; }
  // The history's segment `sequence`, or one removed from it that is still available (RFC 8216
  // §6.2.2), null otherwise: listed (or last listed) under its live URI, its bytes are read back
  // from the recording on request (HlsStore::wait with WaitTarget::recorded).
  const protocol::HlsRecordedSegment* recorded_segment(uint64_t sequence) const;
  // hls.rewind: how many segments removed from the history are still available (§6.2.2).
  size_t rewind_removed() const { return rewind_removed_.size(); }
  // How far the stream has got, for a blocking playlist reload (protocol/hls_delivery.h).
  protocol::HlsProgress progress() const;
  uint64_t next_part() const { return next_part_; }  // the preload-hinted part's index
  // The bytes behind STREAM/<protocol::hls_segment_file(form, number)>: a held segment of this
  // stream's container, one read back from the recording (hls.rewind) or an init section;
  // nullptr for anything else.
  const BufferRef* file(protocol::HlsSegmentForm form, uint64_t number) const;
  // Seconds a client or cache may keep a segment (Cache-Control: max-age): the playlist
  // duration plus one target duration, so at least as long as the segment stays fetchable
  // for a client that saw it listed.
  uint32_t segment_max_age_s() const;
  // Total EXTINF duration of the playlist, seconds.
  double playlist_duration_s() const;
  bool live() const { return producers_ > 0; }
  HlsStreamStats stats() const;
  // This stream's EXT-X-STREAM-INF entry in its group's multivariant playlist (URI NAME.m3u8):
  // the traits its segmenter gave and BANDWIDTH / AVERAGE-BANDWIDTH measured over the listed
  // segments (peak and mean of bytes x 8 / duration), and AUDIO=`audio_group` unless empty.
  // Empty before the first segment.
  std::string variant_entry(const std::string& audio_group = {}) const;
  // A multitrack publish's multivariant playlist (HlsStore::set_multivariant), answered for this
  // stream's playlist instead of its own; null for any other stream.
  const BufferRef& multivariant() const { return multivariant_; }

 private:
  friend class HlsStore;
  void render_cache() const;  // playlist_cache_ and target_cache_ from the playlist as it is
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
  mutable BufferRef playlist_cache_;     // null: the playlist changed since it was last rendered
  mutable uint32_t target_cache_ = 0;    // valid while playlist_cache_ is set
  std::deque<HlsPart> parts_;            // LL-HLS parts of the held segments and the open one
  uint64_t next_part_ = 0;
  std::map<uint64_t, BufferRef> inits_;  // fMP4 init sections by id (init-ID.mp4)
  // hls.rewind: recorded segments, contiguous by sequence, at most rewind long (and
  // kMaxRewindSegments); those before the window are listed first (protocol::hls_recorded_run).
  std::vector<protocol::HlsRecordedSegment> rewind_;  // oldest first (a vector: rendered as a span)
  // hls.rewind: segments the playlist listed from the history and no longer lists (past rewind, or
  // the history ended), still read back on request until expire_ms (RFC 8216 §6.2.2): only their
  // place in the recording is kept. By sequence, expire_ms non-decreasing; at most
  // kMaxRewindSegments.
  struct RemovedRecorded {
    protocol::HlsRecordedSegment segment;
    int64_t expire_ms = 0;
  };
  std::deque<RemovedRecorded> rewind_removed_;
  std::optional<TimerId> rewind_timer_;  // fires when rewind_removed_.front() expires
  // hls.rewind: the last segments read back from the recording (sequence, bytes), oldest first,
  // at most kReadBack; and those being read.
  std::deque<std::pair<uint64_t, BufferRef>> read_back_;
  std::vector<uint64_t> reading_;
  static constexpr size_t kReadBack = 8;
  uint64_t init_id_ = 0;  // the current one (0: none yet)
  mutable uint64_t playlist_reads_ = 0;
  HlsRenditionTraits traits_;
  BufferRef multivariant_;
};

// Where a stream's HLS sequence numbers continue from when it is published again on another
// worker (workers/hls_sequence_memo.h keeps them in shared memory). A hint: nothing means start
// at 0.
struct HlsPosition {
  uint64_t next_sequence = 0;
  uint64_t discontinuities = 0;  // HlsPlaylist::discontinuities_so_far()
};
class HlsContinuity {
 public:
  virtual ~HlsContinuity() = default;
  virtual std::optional<HlsPosition> recall(const std::string& key) const = 0;
  virtual void remember(const std::string& key, const HlsPosition& at) = 0;
  // This store dropped key's state (after the grace): another worker cannot be served it here.
  virtual void dropped(const std::string& /*key*/) {}
};

class HlsStore {
 public:
  HlsStore(TimerQueue& timers, spdlog::logger& log);
  ~HlsStore();  // cancels its timers; buffers still being sent stay alive by their own refs
  HlsStore(const HlsStore&) = delete;
  HlsStore& operator=(const HlsStore&) = delete;

  // Optional (null: every new state starts at sequence 0). Not owned; outlives the store.
  void set_continuity(HlsContinuity* c) { continuity_ = c; }

  // ---- producer side (HlsSegmenter) ----
  // A publisher starts producing `key`. A state kept from an earlier publisher (within the
  // grace) is revived: the ENDLIST goes away and the next segment carries a discontinuity.
  void open(const StreamKey& key, const config::HlsConfig& cfg);
  // Appends a finished segment to the playlist of an open stream; returns its sequence number
  // (or nothing when the stream is not open). Segments that slide out are retained (§6.2.2).
  std::optional<uint64_t> add_segment(const StreamKey& key, BufferRef data, double duration_s,
                                      bool discontinuity);
  // fMP4: the init section of the segments added from now on (a new one after a codec change).
  // The stream's segments are fMP4 from then on, whatever hls.container said (AV1, VP9, Opus).
  void set_init(const StreamKey& key, BufferRef init);
  // hls.rewind (media/rewind_link.h): the current init section and its id (null: none), and a
  // segment recorded under init `init_id` (ignored unless that is still the current one, and it
  // continues the history or is still in the window; a gap starts the history again).
  BufferRef current_init(const StreamKey& key, uint64_t& id) const;
  void add_recorded(const StreamKey& key, uint64_t init_id, protocol::HlsRecordedSegment s);
  static constexpr size_t kMaxRewindSegments = 20000;
  // hls.rewind: reads [offset, offset + length) of the recording file at `path` off the event
  // loop and calls `done` on the loop with the bytes (null: failed). False: not queued (busy); it
  // must not call `done` before it returns. Set by the server layer (media/ reads no file).
  using RecordedReader = std::function<bool(const std::string& path, uint64_t offset, uint64_t length,
                                            std::function<void(BufferRef)> done)>;
  void set_recorded_reader(RecordedReader r) { reader_ = std::move(r); }
  // LL-HLS: a part of the segment being built (its bytes come again in add_segment's data).
  void add_part(const StreamKey& key, BufferRef data, double duration_s, bool independent);
  // A rendition's traits for the multivariant playlist (variant_entry), from the segmenter.
  void set_traits(const StreamKey& key, HlsRenditionTraits traits);
  // A rendition of a group (docs/abr.md, "Aligned segments"): the first segment of a fresh
  // playlist is numbered `sequence` (its cut slot) when that is ahead of where it would start,
  // so that renditions cut at the same media times carry the same numbers. Later segments
  // number on by one; a playlist with segments (a republish within the grace) is left as is.
  void align_first_sequence(const StreamKey& key, uint64_t sequence);
  // A multitrack publish (media/hls_track_renditions.h): key's playlist is this multivariant
  // playlist of its tracks' renditions from now on, until the next publisher opens key.
  void set_multivariant(const StreamKey& key, const std::string& text);
  // LL-HLS: key's EXT-X-RENDITION-REPORT URIs, for renditions known only once published (a
  // multitrack publish's tracks); a suffix rendition's come from the configuration.
  void set_rendition_reports(const StreamKey& key, std::vector<std::string> uris);

  // ---- held requests (LL-HLS blocking playlist reload and preload hints) ----
  // Calls `done(true)` once `key` has got to what `target` names (at once is the caller's
  // business: it asks first), or `done(false)` when the stream ends, is dropped, or
  // `timeout_ms` passes. Returns an id for cancel_wait; no callback after a cancel.
  struct WaitTarget {
    bool part_file = false;        // wait for part-INDEX.m4s (index in msn), else the playlist
    uint64_t msn = 0;              // _HLS_msn, or the part index (or the segment's sequence)
    std::optional<uint64_t> part;  // _HLS_part
    bool recorded = false;         // hls.rewind: segment msn, read back from the recording
  };
  uint64_t wait(const StreamKey& key, WaitTarget target, int64_t timeout_ms, std::function<void(bool)> done);
  void cancel_wait(uint64_t id);
  size_t waiting() const { return waits_.size(); }
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
  void read_recorded(const StreamKey& key, uint64_t sequence);  // for a WaitTarget::recorded
  // hls.rewind, RFC 8216 §6.2.2: the first `count` segments of the history leave it; those the
  // playlist listed (before its window) stay available for their duration plus `listed_s` (the
  // duration of the playlist that listed them).
  void remove_recorded(HlsStreamState& st, size_t count, double listed_s);
  void expire_recorded(const StreamKey& key);
  void schedule_recorded_expiry(HlsStreamState& st);
  // The playlist's duration as rendered: the history listed before the window and the window.
  static double listed_duration_s(const HlsStreamState& st);
  void recorded_read(const StreamKey& key, uint64_t sequence, BufferRef data);
  HlsContinuity* continuity_ = nullptr;
  void retire(HlsStreamState& st, uint64_t sequence, int64_t expire_ms);
  void schedule_expiry(HlsStreamState& st);
  void expire(const StreamKey& key);
  void pop_retired(HlsStreamState& st);
  void drop(const StreamKey& key);
  void cancel_timers(HlsStreamState& st);

  // Answers the held requests of `key` that its progress now satisfies (all of them, `false`,
  // when `gone`).
  void wake(const StreamKey& key, bool gone = false);
  bool satisfied(const HlsStreamState& st, const WaitTarget& t) const;

  struct Wait {
    StreamKey key;
    WaitTarget target;
    TimerId timer{};
    std::function<void(bool)> done;
  };

  TimerQueue& timers_;
  spdlog::logger& log_;
  core::StreamLog stream_log(const HlsStreamState& st) const;  // log_, about st's stream
  std::map<StreamKey, std::unique_ptr<HlsStreamState>> streams_;
  std::map<uint64_t, Wait> waits_;
  uint64_t next_wait_ = 1;
  RecordedReader reader_;
};

}  // namespace rill::media
