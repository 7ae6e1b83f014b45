#pragma once
// WorkerLinkSession: one connection accepted on this worker's socket. It reads the request
// line (protocol/worker_link_frame.h), checks app and stream names with the one name rule
// (media::StreamKey), then either
//  - PLAY: becomes a media::Subscriber of the local stream — only if this worker owns it — and
//    sends it as worker-link frames: Publish, then the hub's replay (metadata, sequence headers, GOP
//    cache), then live frames; Unpublish or End when the publisher leaves or the stream ends, then
//    it closes. Output goes through its connection's bounded media::OutputQueue (the app's queue
//    limits, the same drop/disconnect policy as players), one writev per loop iteration:
//    header and shared payload as separate buffers, no copy;
//  - STATS / STATS ALL: answers this worker's (or every worker's) statistics in one Stats frame;
//  - HLS: answers one playlist or segment from this worker's HlsStore with the HLS responder's
//    answer (media/hls_responder.h: status, cache policy, body or reason) in one HlsObject frame,
//    holding it first where the responder says so (workers/hls_fetcher.h is the other end);
// and answers anything else with one Error frame. One-shot answers close after the frame.
#include <memory>
#include <optional>
#include <string>

#include "rill/core/timer_queue.h"
#include "rill/media/hls_responder.h"
#include "rill/media/hls_store.h"
#include "rill/media/stream.h"
#include "rill/net/connection.h"
#include "rill/net/worker_core.h"
#include "rill/protocol/worker_link_frame.h"

namespace rill::workers {

class StatsGatherer;
class StreamLocator;
class WorkerDetails;

class WorkerLinkSession final : public net::Session, public net::ConnectionHandler, public media::Subscriber {
 public:
  // `locator` says which streams this worker may send (null: none); `details` answers STATS and
  // the API's actions. Both outlive the session.
  WorkerLinkSession(net::WorkerCore& ctx, const StreamLocator* locator, WorkerDetails& details,
                    std::unique_ptr<net::Connection> conn);
  ~WorkerLinkSession() override;

  void start();
  void close(const char* reason) override;
  net::SessionInfo describe() const override;

  // net::ConnectionHandler
  void on_data(std::span<const uint8_t> bytes) override;
  void on_close(const std::string& reason) override;
  // media::Subscriber
  void on_frame(const media::FramePtr& frame) override;
  void on_gop_replay(bool active) override {
    if (conn_) conn_->queue().set_replay(active);
  }
  void on_publish(media::Stream&) override {}
  void on_unpublish(media::Stream& s) override;
  void on_stream_end(media::Stream& s) override;
  bool watched() const override { return far_watching_; }

 private:
  void handle_request(std::string_view line);
  void read_notes(std::string_view bytes);  // after a PLAY request (protocol/worker_link_note.h)
  void serve(const protocol::LinkPlayRequest& r);
  void serve(const protocol::LinkStatsRequest& r);
  void serve(const protocol::LinkHlsRequest& r);
  void serve(const protocol::LinkKickRequest& r);
  void serve(const protocol::LinkDropRequest& r);
  void serve(const protocol::LinkRecordRequest& r);
  void serve(const protocol::LinkRelayAddRequest& r);
  void serve(const protocol::LinkRelayDelRequest& r);
  // The HLS responder's answer as one HlsObject frame (media/hls_responder.h).
  void send_hls(const media::StreamKey& key, const protocol::HlsObjectName& object,
                const media::HlsAnswer& a);
  void answer(const protocol::LinkMessage& m);
  void refuse(const std::string& why);
  void stop_subscription();

  net::WorkerCore& ctx_;
  const StreamLocator* locator_;
  WorkerDetails& details_;
  std::unique_ptr<net::Connection> conn_;
  bool closed_ = false;
  int64_t since_ms_ = 0;
  std::optional<TimerId> request_timer_;
  std::string line_;  // request line being read
  bool have_request_ = false;
  bool far_watching_ = true;  // the asking worker's last WATCHING note
  std::string key_;                  // "app/name" of a PLAY
  media::Stream* stream_ = nullptr;  // subscribed (PLAY)
  uint64_t frames_out_ = 0;
  std::unique_ptr<StatsGatherer> gatherer_;  // STATS ALL in progress
  uint64_t hls_wait_ = 0;                     // a held LL-HLS request (HlsStore::wait id)
};

}  // namespace rill::workers
