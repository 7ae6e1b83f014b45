#pragma once
// LinkQuery: one request on another worker's socket and its one answer frame — an HLS
// object, statistics, or an Error (protocol/worker_link_frame.h). HlsFetcher and StatsGatherer
// ask with it; a PLAY stream is WorkerLink's. The connection is a net::PlainConnection on
// net::connect_unix(), so reads are bounded and the request goes out with the loop's writes.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "rill/core/timer_queue.h"
#include "rill/net/connection.h"
#include "rill/net/worker_core.h"
#include "rill/protocol/worker_link_frame.h"

namespace rill::workers {

class LinkQuery final : private net::ConnectionHandler {
 public:
  struct Result {
    std::optional<protocol::LinkMessage> answer;  // the first frame the worker sent
    std::string failure;                          // no answer: why (connect, EOF, malformed, timeout)
  };
  using Done = std::function<void(Result&&)>;

  LinkQuery(net::WorkerCore& ctx, std::string socket_path, protocol::LinkRequest request,
            protocol::LinkReaderLimits limits, std::chrono::milliseconds timeout, Done done);
  ~LinkQuery();
  LinkQuery(const LinkQuery&) = delete;
  LinkQuery& operator=(const LinkQuery&) = delete;

  // Connects and sends the request. `done` runs once, later, from the event loop (never inside
  // start()); it may destroy the query. Destroying the query earlier cancels it.
  void start();

 private:
  void on_data(std::span<const uint8_t> bytes) override;
  void on_close(const std::string& reason) override;
  void finish(Result&& r);
  void finish_later(std::chrono::milliseconds after, std::string failure);

  net::WorkerCore& ctx_;
  std::string path_;
  protocol::LinkRequest request_;
  std::chrono::milliseconds timeout_;
  Done done_;
  protocol::LinkFrameReader reader_;
  std::optional<protocol::LinkMessage> answer_;
  std::unique_ptr<net::Connection> conn_;
  std::optional<TimerId> timer_;
  bool finished_ = false;
};

}  // namespace rill::workers
