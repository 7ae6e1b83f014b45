#pragma once
// PushOutput: a stream output (media/stream_output.h) that publishes the stream to other RTMP
// servers — an app's static `push` (one target) or an edge's forward of a local publish to its
// origins (the first that accepts, in order). A target that is down is retried with back-off
// (the first delay doubling up to 30 s) without affecting the publisher or the local players; the
// push ends with the stream's publisher.
//
// On (re)connect the target gets the stream's metadata, sequence headers and current GOP first,
// so it starts on a keyframe. A slow target loses video up to the next keyframe rather than
// growing memory. Loop protection: the connect carries "rill-hops" = the stream's hops + 1; a
// stream that already crossed kMaxRelayHops servers is not pushed (an A <-> B push pair stops).
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "rill/cluster/relay_info.h"
#include "rill/cluster/rtmp_upstream.h"
#include "rill/config/config.h"
#include "rill/core/stream_log.h"
#include "rill/media/stream.h"
#include "rill/media/stream_output.h"
#include "rill/net/worker_core.h"

namespace rill::cluster {

inline constexpr uint32_t kMaxRelayHops = 8;

class PushOutput;
// The pushes alive on a worker (Cluster::list): shared, as outputs may outlive the Cluster.
using PushSet = std::set<PushOutput*>;

struct PushOptions {
  std::string id;
  RelayKind kind = RelayKind::Push;
  std::vector<config::RtmpUrl> targets;  // tried in order (one for a push)
  int64_t reconnect_ms = 2000;           // first retry delay, doubling
  int64_t reconnect_max_ms = 30'000;
  int64_t connect_timeout_ms = 5000;
  size_t max_queued_bytes = 8 * 1024 * 1024;  // past this, video waits for the next keyframe
};

class PushOutput final : public media::StreamOutput, public RtmpUpstreamEvents {
 public:
  PushOutput(net::WorkerCore& ctx, media::Stream& stream, PushOptions opts, std::shared_ptr<PushSet> set);
  ~PushOutput() override;

  std::string_view name() const override { return name_; }
  void on_start(const media::PublishSession& s) override;
  void on_frame(const media::FramePtr& frame) override;
  void on_stop(const media::PublishSession& s) override;

  RelayInfo info() const;
  const std::string& id() const { return opts_.id; }
  // Ends the push for good (its relay was removed); the output stays inert until unpublish.
  void cancel();

 private:
  core::StreamLog stream_log() const { return {*ctx_.log, stream_.key_text()}; }  // the pushed stream
  void on_upstream_up() override;
  void on_upstream_down(const std::string& why) override;
  void connect();
  void send(const media::FramePtr& f);
  std::string url_of(size_t i) const;

  net::WorkerCore& ctx_;
  media::Stream& stream_;
  PushOptions opts_;
  std::shared_ptr<PushSet> set_;
  std::string name_;
  std::unique_ptr<RtmpUpstream> upstream_;
  size_t current_ = 0;
  size_t tried_in_round_ = 0;
  int64_t backoff_ms_ = 0;
  bool synced_ = false;     // the target got headers + GOP; live frames follow
  bool wait_key_ = false;   // a slow target: video resumes at a keyframe
  bool ever_up_ = false;
  bool stopped_ = false;
  std::optional<TimerId> retry_timer_;
  RelayProgress progress_;
};

}  // namespace rill::cluster
