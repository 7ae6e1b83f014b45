#pragma once
// Stream: one live stream (app/name) — at most one publisher, any number of subscribers, a GOP
// cache. Ingest hands it raw FLV tag bodies; it classifies them, rewrites timestamps onto one
// output timeline that never goes backwards (a republish continues where the last one stopped),
// remembers metadata and sequence headers, and fans every frame out to every subscriber. While a
// publisher is attached the stream also runs its outputs (HLS, ...: stream_output.h), built by
// the registry's OutputFactory for that publisher.
//
// The hub knows no socket and no clock but the TimerQueue it is given. Everything runs on one
// worker thread.
#include <bitset>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/logger.h>

#include "rill/config/config.h"
#include "rill/core/stream_log.h"
#include "rill/core/timer_queue.h"
#include "rill/media/gop_cache.h"
#include "rill/media/media_frame.h"
#include "rill/media/stream_key.h"
#include "rill/media/stream_output.h"
#include "rill/media/subscriber.h"

namespace rill::record {
class FileWriter;
}  // namespace rill::record

namespace rill::media {

class StreamRegistry;
class HlsStore;

// What the hub learned about the published media (for stats, the FLV header, HLS).
struct StreamInfo {
  bool has_audio = false;
  bool has_video = false;
  uint8_t video_codec_id = 0;  // FLV codec id (7 AVC, 12 HEVC) or 0
  uint32_t video_fourcc = 0;   // Enhanced RTMP FourCC, or 0
  uint8_t audio_format = 0;    // FLV sound format (10 AAC, 2 MP3)
  uint64_t frames_in = 0;
  uint64_t bytes_in = 0;
  uint64_t frames_dropped = 0;  // malformed bodies dropped (not forwarded)
};

class Stream {
 public:
  Stream(StreamRegistry& registry, StreamKey key, const config::AppConfig& cfg);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  const std::string& app() const { return key_.app; }
  const std::string& name() const { return key_.name; }
  const StreamKey& key() const { return key_; }
  const std::string& key_text() const { return key_text_; }  // "app/name", for logs
  // The registry's log, scoped to this stream (a "stream" field in JSON lines).
  core::StreamLog log() const;
  const config::AppConfig& app_config() const { return cfg_; }
  const StreamInfo& info() const { return info_; }
  const GopCache& gop_cache() const { return gop_; }
  // The registry this stream belongs to (its timers, log and HlsStore: what outputs build on).
  StreamRegistry& registry() const { return registry_; }
  // The current publisher's outputs (empty without a publisher).
  const StreamOutputs& outputs() const { return outputs_; }
  // Adds an output to the current publisher's list and starts it (a relay created at run time).
  // False, and nothing kept, without a publisher. Not from inside an output's on_frame.
  bool add_output(std::unique_ptr<StreamOutput> output);

  // --- publishing ---
  bool has_publisher() const { return publisher_ != nullptr; }
  // Claims the stream for a publisher (an opaque owner tag, e.g. the session). False if another
  // publisher holds it (the caller answers NetStream.Publish.BadName). Builds and starts the
  // outputs the registry's factory gives for the app and `origin` (e.g. no HLS for a WorkerLink
  // copy: HLS is produced once, by the owning worker).
  bool attach_publisher(const void* owner, PublishOrigin origin);
  PublishOrigin publish_origin() const { return origin_; }  // of the current (or last) publisher
  // One message from the publisher: type and timestamp as received, payload = FLV tag body.
  // Malformed bodies are dropped (counted) rather than forwarded. Script data other than
  // onMetaData/@setDataFrame is ignored.
  void publish(MediaType type, uint32_t timestamp, BufferRef payload);
  // The publisher left (unpublish, disconnect). Its outputs are stopped and destroyed.
  // Subscribers get on_unpublish and stay; after the app's publisher_idle_timeout with no new
  // publisher they get on_stream_end. May destroy the stream when nobody is left: do not touch
  // it after this call.
  void detach_publisher(const void* owner);
  // How many servers the current publisher's media crossed (RTMP connect's "rill-hops"; 0: a
  // local encoder). Pushes forward hops + 1 and stop at the cluster's limit (loop protection).
  uint32_t relay_hops() const { return relay_hops_; }
  void set_relay_hops(uint32_t hops) { relay_hops_ = hops; }

  // --- tracks (E-RTMP v2 multitrack; track_selection.h) ---
  // Whether the current publisher has sent audio or video of `track` (plain tags are track 0).
  bool has_track(uint8_t track) const { return tracks_.test(track); }
  // one(track) with the audio of `track` if it has audio, else track 0's.
  TrackSelection audio_track_for(uint8_t track) const {
    return TrackSelection::one(track, audio_tracks_.test(track) ? track : 0);
  }
  // Whether a sequence header came (so has_track can say no to a player for good).
  bool has_headers() const {
    return gop_.video_header() || gop_.audio_header() || !gop_.track_headers().empty();
  }

  // --- subscribing ---
  // Attaches and replays metadata, sequence headers and the GOP cache to the new subscriber
  // (synchronously, before returning), as its track_selection() accepts them; a player of a track
  // other than 0 starts at that track's first cached keyframe. With no publisher, the subscriber
  // waits: after the app's play_wait (if > 0) it gets on_stream_end unless a publisher came.
  void add_subscriber(Subscriber* s);
  // May destroy the stream when nobody is left: do not touch it after this call.
  void remove_subscriber(Subscriber* s);
  size_t subscriber_count() const { return subscribers_.size() - removed_pending_; }
  // True when a subscriber has a viewer behind it (Subscriber::watched): a worker link whose far
  // side has no player does not count. Stops at the first that does.
  bool watched() const;

 private:
  friend class StreamRegistry;
  class DispatchScope;  // marks a callback loop (see dispatching_), compacts at the outermost end
  void fan_out(const FramePtr& f);
  void deliver(const FramePtr& f);  // to the GOP cache, the outputs (track 0) and the subscribers
  // A multitrack tag's tracks, each re-framed as a single-track tag (Reframed frames, no
  // timestamp yet). Throws ProtocolError on a malformed tag.
  // `pool`: the publisher's (the tag's payload came from it), or null.
  std::vector<std::shared_ptr<MediaFrame>> reframe_tracks(MediaType type, std::span<const uint8_t> body,
                                                          BufferPool* pool);
  void start_outputs(PublishOrigin origin);
  void stop_outputs();  // on_stop, then destroys them
  uint32_t map_timestamp(uint32_t in);
  void start_idle_timer();
  void cancel_idle_and_waits();
  void end_stream();  // tells every subscriber on_stream_end and detaches them
  void maybe_release();
  void detach_at(size_t i);
  void end_subscriber(Subscriber* s);  // play_wait expired for s
  void cancel_wait(Subscriber* s);
  void compact();
  size_t index_of(const Subscriber* s) const;  // subscribers_.size() when absent

  StreamRegistry& registry_;
  StreamKey key_;
  std::string key_text_;
  const config::AppConfig& cfg_;
  StreamInfo info_;
  GopCache gop_;
  std::bitset<256> tracks_;        // tracks the current publisher sent audio/video of
  std::bitset<256> audio_tracks_;  // of those, the ones with audio
  const void* publisher_ = nullptr;
  PublishOrigin origin_ = PublishOrigin::Ingest;  // of the current publisher
  uint32_t relay_hops_ = 0;                       // of the current publisher
  // Slots are nulled (not erased) while dispatching, so subscribers may leave during a callback;
  // compacted when the outermost dispatch ends.
  std::vector<Subscriber*> subscribers_;
  size_t removed_pending_ = 0;  // nulled slots in subscribers_
  // Subscribers waiting for a publisher with a play_wait timer running.
  std::vector<std::pair<Subscriber*, TimerId>> waiters_;
  // Subscribers attached while no publisher was there: they get on_publish when one comes.
  bool ever_published_ = false;
  // Output timeline: out = in - in_base + out_base (mod 2^32), rebased on every new publisher.
  bool timeline_started_ = false;
  uint32_t in_base_ = 0, out_base_ = 0, last_out_ = 0;
  bool session_started_ = false;  // the current publisher's first frame has been mapped
  // Progress of the current session: newest input timestamp, and how far (64-bit, so a session
  // may run past the 32-bit wrap any number of times) it lies after the session's first frame.
  uint32_t session_max_in_ = 0;
  uint64_t session_span_ = 0;
  std::optional<TimerId> idle_timer_;
  std::optional<TimerId> release_timer_;  // deferred release (release() called while dispatching)
  StreamOutputs outputs_;                 // the current publisher's, in the order they get frames
  bool dispatching_ = false;  // re-entrancy guard while calling subscribers
};

// StreamRegistry: the streams of one worker, by app/name. Streams with neither a publisher nor
// subscribers (nor a pending idle wait) are destroyed. `outputs` builds each publisher's outputs
// (default_outputs, or a factory that adds those of other modules to it; empty: none).
class StreamRegistry {
 public:
  StreamRegistry(TimerQueue& timers, std::shared_ptr<spdlog::logger> log, OutputFactory outputs);
  ~StreamRegistry();

  Stream* find(const StreamKey& key);
  Stream& get_or_create(const StreamKey& key, const config::AppConfig& cfg);
  size_t size() const { return streams_.size(); }
  template <typename F>
  void for_each(F&& f) {
    for (auto& [k, s] : streams_) f(*s);
  }

  TimerQueue& timers() { return timers_; }
  spdlog::logger& log() { return *log_; }
  HlsStore& hls() { return *hls_; }  // this worker's HLS playlists and segments
  // The worker's recording writer thread (apps.NAME.record); null: nothing is recorded. It must
  // outlive the registry (recorders close their files through it when their streams go).
  void set_record_writer(record::FileWriter* writer) { record_writer_ = writer; }
  record::FileWriter* record_writer() const { return record_writer_; }

 private:
  friend class Stream;
  // Destroys the stream (deferred to a 0 ms timer if called while it is dispatching).
  void release(Stream* s);
  StreamOutputs build_outputs(Stream& s, PublishOrigin origin);

  TimerQueue& timers_;
  std::shared_ptr<spdlog::logger> log_;
  OutputFactory make_outputs_;
  std::unique_ptr<HlsStore> hls_;  // outlives the streams (declared before them)
  record::FileWriter* record_writer_ = nullptr;
  std::map<StreamKey, std::unique_ptr<Stream>> streams_;
};

}  // namespace rill::media
