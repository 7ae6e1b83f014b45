#include "rill/server/recording_mp4_download.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "rill/config/config.h"
#include "rill/core/access_line.h"
#include "rill/net/blocking_work_thread.h"
#include "rill/server/session_access.h"

namespace rill::server {

namespace {

// `n` bytes at `offset` of `fd`, or why not.
std::string read_piece(int fd, uint64_t offset, size_t n, std::vector<uint8_t>& out) {
  out.resize(n);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, out.data() + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return std::string("read: ") + std::strerror(errno);
    if (r == 0) return "the file ends at " + std::to_string(offset + got) + ", before the cut's bytes";
    got += static_cast<size_t>(r);
  }
  return {};
}

}  // namespace

RecordingMp4Download::RecordingMp4Download(net::WorkerCore& ctx, net::BlockingWorkThread& work,
                                           http::HttpStreamHandover handover,
                                           std::shared_ptr<const RecordingMp4Cut> cut, uint64_t first,
                                           uint64_t length, Access access, Done done)
    : ctx_(ctx),
      work_(work),
      cut_(std::move(cut)),
      pos_(first),
      end_(first + length),
      access_(std::move(access)),
      done_(std::move(done)) {
  body_ = std::make_unique<http::HttpBodyStream>(ctx_, std::move(handover),
                                                 [this](const std::string& why) { finish(why); });
}

RecordingMp4Download::~RecordingMp4Download() {
  *alive_ = false;
  if (retry_) ctx_.timers->cancel(retry_);
}

void RecordingMp4Download::start() {
  body_->on_drained([this] { pump(); });
  body_->start();
  pump();
}

void RecordingMp4Download::push(std::span<const uint8_t> bytes) {
  pos_ += bytes.size();
  body_->push_control(bytes);  // unframed: the response has a Content-Length
  body_->request_flush(true);
}

// Queues what is in memory (the head), then reads the next piece of a run while the queue has
// room; at the end, the graceful close.
void RecordingMp4Download::pump() {
  if (finished_ || reading_ || ending_ || !body_->open()) return;
  const std::vector<uint8_t>& head = cut_->mp4.head;
  if (pos_ < head.size() && pos_ < end_) {
    const uint64_t n = std::min<uint64_t>(head.size(), end_) - pos_;
    push(std::span<const uint8_t>(head).subspan(static_cast<size_t>(pos_), static_cast<size_t>(n)));
  }
  if (pos_ >= end_) {
    ending_ = true;
    body_->end(std::chrono::milliseconds(ctx_.config->http.timeout.count()));
    return;
  }
  if (body_->queued_bytes() >= kMaxQueued) return;  // on_drained() calls again
  read_next();
}

void RecordingMp4Download::read_next() {
  const std::vector<uint64_t>& at = cut_->run_at;
  const size_t r = static_cast<size_t>(std::upper_bound(at.begin(), at.end(), pos_) - at.begin()) - 1;
  const protocol::Mp4ByteRun& run = cut_->mp4.runs[r];
  const uint64_t within = pos_ - at[r];
  const size_t n = static_cast<size_t>(std::min<uint64_t>({kPiece, run.length - within, end_ - pos_}));
  reading_ = true;
  const bool queued = work_.submit([cut = cut_, fd = cut_->files[run.file].get(),
                                    offset = run.offset + within, n, alive = std::weak_ptr<bool>(alive_),
                                    self = this]() -> net::BlockingWorkThread::Continuation {
    std::vector<uint8_t> bytes;
    std::string error = read_piece(fd, offset, n, bytes);
    return [alive, self, bytes = std::move(bytes), error = std::move(error)]() mutable {
      if (auto a = alive.lock(); a && *a) self->on_piece(std::move(bytes), error);
    };
  });
  if (queued) return;
  // The work thread's queue is full (many downloads and listings at once): try again shortly.
  reading_ = false;
  retry_ = ctx_.timers->schedule(std::chrono::milliseconds(20), [this] {
    retry_ = 0;
    pump();
  });
}

void RecordingMp4Download::on_piece(std::vector<uint8_t> bytes, const std::string& error) {
  reading_ = false;
  if (finished_ || !body_->open()) return;
  if (!error.empty()) {
    ctx_.log->warn("recording.mp4: {} {}/{}: {}", access_.peer, access_.app, access_.name, error);
    body_->close(error);
    return finish(error);
  }
  push(bytes);
  pump();
}

void RecordingMp4Download::finish(const std::string& reason) {
  if (std::exchange(finished_, true)) return;
  core::SessionAccess a;
  a.peer = access_.peer;
  a.protocol = "recording";
  a.command = "download";
  a.app = access_.app;
  a.name = access_.name;
  a.args = access_.args;
  a.bytes_out = body_->body_bytes();
  a.duration_ms = ctx_.timers->now_ms() - access_.started_ms;
  a.close_reason = reason;
  a.agent = access_.agent;
  log_session_end(ctx_, a);
  if (done_) done_(this);
}

}  // namespace rill::server
