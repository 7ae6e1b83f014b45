#include "rill/workers/link_query.h"

#include "rill/protocol/error.h"

namespace rill::workers {

LinkQuery::LinkQuery(net::WorkerCore& ctx, std::string socket_path, protocol::LinkRequest request,
                     protocol::LinkReaderLimits limits, std::chrono::milliseconds timeout, Done done)
    : ctx_(ctx),
      path_(std::move(socket_path)),
      request_(std::move(request)),
      timeout_(timeout),
      done_(std::move(done)),
      reader_([this](protocol::LinkMessage&& m) {
        if (!answer_) answer_ = std::move(m);  // one answer; anything after it is ignored
      }, limits) {}

LinkQuery::~LinkQuery() {
  if (timer_) ctx_.timers->cancel(*timer_);
}

void LinkQuery::start() {
  std::string error;
  net::UniqueFd fd = net::connect_unix(path_, &error);
  if (!fd) return finish_later(std::chrono::milliseconds(0), error);  // from the loop, not from start()
  conn_ = std::make_unique<net::PlainConnection>(ctx_.base, *ctx_.flusher, std::move(fd), path_);
  conn_->send(SharedBuffer::copy_of(std::string_view(protocol::format_link_request(request_))));
  conn_->start(*this);
  finish_later(timeout_, "no answer within " + std::to_string(timeout_.count()) + " ms");
}

void LinkQuery::finish_later(std::chrono::milliseconds after, std::string failure) {
  timer_ = ctx_.timers->schedule(after, [this, failure = std::move(failure)]() mutable {
    timer_.reset();
    finish({std::nullopt, std::move(failure)});
  });
}

void LinkQuery::on_data(std::span<const uint8_t> bytes) {
  try {
    reader_.feed(bytes);
  } catch (const protocol::ProtocolError& e) {
    return finish({std::nullopt, std::string("malformed answer: ") + e.what()});
  }
  if (answer_) finish({std::move(answer_), {}});
}

void LinkQuery::on_close(const std::string& reason) { finish({std::nullopt, "no answer: " + reason}); }

void LinkQuery::finish(Result&& r) {
  if (finished_) return;
  finished_ = true;
  if (timer_) ctx_.timers->cancel(*timer_);
  timer_.reset();
  if (conn_) conn_->close("answered");
  Done done = std::move(done_);
  done(std::move(r));  // may destroy *this
}

}  // namespace rill::workers
