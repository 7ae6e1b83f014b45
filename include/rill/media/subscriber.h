#pragma once
// Subscriber: the one small interface every output plugs into the hub through — an RTMP player,
// an HTTP-FLV response, the HLS segmenter, a relay link to another worker. None knows another.
#include "rill/media/media_frame.h"
#include "rill/media/track_selection.h"

namespace rill::media {

class Stream;

class Subscriber {
 public:
  virtual ~Subscriber() = default;
  // A frame, in order: on attach first metadata, sequence headers and the GOP cache, then live.
  virtual void on_frame(const FramePtr& frame) = 0;
  // Brackets the replay of metadata, sequence headers and the GOP cache to a new subscriber
  // (true before the first replayed frame, false after the last): outputs with queue bounds in
  // seconds do not count that burst against them (OutputQueue::set_replay).
  virtual void on_gop_replay(bool /*active*/) {}
  // A publisher started publishing to a stream this subscriber waits on or watched before.
  // (Not called for the publisher that was already there when the subscriber attached.)
  virtual void on_publish(Stream&) {}
  // The publisher left. The subscriber stays attached; the stream waits for a new publisher for
  // the app's publisher_idle_timeout.
  virtual void on_unpublish(Stream&) {}
  // The stream is gone (idle timeout passed, no publisher came back, or play_wait expired with no
  // publisher). The hub has already detached this subscriber: it must not call remove_subscriber.
  virtual void on_stream_end(Stream&) {}
  // Whether someone watches the stream through this subscriber now. Only a worker link can say
  // no (no player of the far worker watches it at the moment); what lingers after the last viewer
  // (an edge pull's idle_close) asks Stream::watched().
  virtual bool watched() const { return true; }

  // Which tracks of a multitrack publish this subscriber gets (track_selection.h); the hub
  // passes on_frame only what it accepts. Set before add_subscriber. All by default (a worker
  // link or relay forwards the tags as sent); a player of one track sets one(N).
  const TrackSelection& track_selection() const { return tracks_; }
  void set_track_selection(TrackSelection t) { tracks_ = t; }

 private:
  TrackSelection tracks_ = TrackSelection::all();
};

}  // namespace rill::media
