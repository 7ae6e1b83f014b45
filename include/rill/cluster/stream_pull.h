#pragma once
// StreamPull: this server's copy of a stream that lives on other servers — an edge's on-demand
// pull of its origins, or a static pull (apps.X.pull). It claims the stream in the ownership table
// (so one worker pulls for the whole server: players on other workers get it over the worker
// link), attaches as its publisher (PublishOrigin::EdgePull / Pull: HLS is produced here, an
// edge's forward push never sends it back), and feeds it from one RtmpUpstream at a time.
//
// Sources are tried in configured order, those that failed recently last. A reset or EOF is acted
// on at once: the next source is tried with no sleep; back-off applies only between full rounds.
// The players stay attached across a failover: the local stream keeps its publisher, timestamps
// continue (TimestampRebase) and the new upstream opens with its sequence headers and a keyframe.
//
// On demand (edge): once a round failed everywhere and the app's play_wait (if longer) has passed,
// the waiting players are answered "not found" and the pull ends; `idle_close` after the last player (or HLS request) it ends; when the origin
// says the stream ended (UnpublishNotify) it ends, so HLS gets #EXT-X-ENDLIST. Static: retried
// forever.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rill/cluster/origin_health.h"
#include "rill/cluster/relay_info.h"
#include "rill/cluster/rtmp_upstream.h"
#include "rill/cluster/timestamp_rebase.h"
#include "rill/config/config.h"
#include "rill/core/stream_log.h"
#include "rill/media/stream.h"
#include "rill/net/worker_core.h"

namespace rill::workers {
class StreamLocator;
}

namespace rill::cluster {

struct PullOptions {
  std::string id;
  media::StreamKey key;
  const config::AppConfig* app = nullptr;
  bool on_demand = true;  // edge pull; false: static pull
  // The stream's URLs, in order (rtmp://host:port/app/name).
  std::vector<config::RtmpUrl> sources;
  int64_t connect_timeout_ms = 2000;
  int64_t idle_close_ms = 10'000;
  int64_t backoff_first_ms = 500;  // between full rounds, doubling
  int64_t backoff_max_ms = 5000;
};

class StreamPull final : public RtmpUpstreamEvents {
 public:
  // The pull's answer to a waiting player: true once media flows (or another worker has the
  // stream), false when no source has it.
  using Found = std::function<void(bool found)>;
  // The pull claims its stream through `locator` (outlives it), as a publisher would.
  StreamPull(net::WorkerCore& ctx, workers::StreamLocator& locator, OriginHealth& health, PullOptions opts,
             std::function<void()> on_finished);
  ~StreamPull();
  StreamPull(const StreamPull&) = delete;
  StreamPull& operator=(const StreamPull&) = delete;

  void start();
  // Ends the pull (the stream loses its publisher); on_finished follows from a timer.
  void stop(const std::string& why);
  // Answered now when up, else when up or failed.
  void add_waiter(Found f);
  // An HLS request for the stream: counts as a player for idle_close.
  void touch();
  bool finished() const { return finished_; }
  bool up() const { return progress_.state == RelayState::Up; }
  RelayInfo info() const;
  const media::StreamKey& key() const { return opts_.key; }

 private:
  core::StreamLog stream_log() const { return {*ctx_.log, opts_.key.str()}; }  // the pulled stream
  void on_upstream_up() override;
  void on_upstream_media(protocol::RtmpMessage&& m) override;
  void on_upstream_status(std::string_view code) override;
  void on_upstream_down(const std::string& why) override;

  bool claim();
  void new_round();
  void try_next();
  void round_failed();
  void tick();
  void answer_waiters(bool found);
  void set_state(RelayState s);
  std::string url_of(size_t i) const;

  net::WorkerCore& ctx_;
  workers::StreamLocator& locator_;
  OriginHealth& health_;
  PullOptions opts_;
  std::function<void()> on_finished_;
  media::Stream* stream_ = nullptr;  // while claimed: we are its publisher
  std::unique_ptr<RtmpUpstream> upstream_;
  std::vector<size_t> order_;  // this round's sources
  size_t next_ = 0;            // into order_
  size_t current_ = 0;         // the source of upstream_
  bool ever_up_ = false;
  bool finished_ = false;
  bool held_elsewhere_ = false;  // ended at once: another worker of this server has the stream
  int64_t backoff_ms_ = 0;
  int64_t started_at_ = 0;
  int64_t last_media_at_ = 0;
  int64_t last_active_at_ = 0;
  uint64_t hls_reads_ = 0;  // the stream's playlist reads seen at the last tick
  TimestampRebase rebase_;
  std::vector<Found> waiters_;
  std::optional<TimerId> tick_timer_;
  std::optional<TimerId> retry_timer_;
  RelayProgress progress_;
};

}  // namespace rill::cluster
