#include "rill/server/file_range_body.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "rill/config/config.h"
#include "rill/net/blocking_work_thread.h"
#include "rill/net/send_buffer.h"

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
    if (r == 0) return "the file ends at " + std::to_string(offset + got) + ", before the body's bytes";
    got += static_cast<size_t>(r);
  }
  return {};
}

}  // namespace

void FileRangeSource::index() {
  run_at.clear();
  size = head.size();
  for (const Run& r : runs) {
    run_at.push_back(size);
    size += r.length;
  }
}

FileRangeBody::FileRangeBody(net::WorkerCore& ctx, net::BlockingWorkThread& work,
                             http::HttpStreamHandover handover, std::shared_ptr<const FileRangeSource> source,
                             uint64_t first, uint64_t length, std::string what, Ended ended)
    : ctx_(ctx),
      work_(work),
      source_(std::move(source)),
      pos_(first),
      end_(first + length),
      what_(std::move(what)),
      ended_(std::move(ended)) {
  body_ = std::make_unique<http::HttpBodyStream>(ctx_, std::move(handover),
                                                 [this](const std::string& why) { end(why); });
}

FileRangeBody::~FileRangeBody() {
  *alive_ = false;
  if (retry_) ctx_.timers->cancel(retry_);
  if (watch_) ctx_.timers->cancel(watch_);
}

void FileRangeBody::start() {
  body_->on_drained([this] { pump(); });
  body_->start();
  last_progress_ms_ = ctx_.timers->now_ms();
  watch_sending();
  pump();
}

void FileRangeBody::watch_sending() {
  const int64_t timeout = ctx_.config->http.timeout.count();
  if (timeout <= 0) return;
  watch_ = ctx_.timers->schedule(std::chrono::milliseconds(std::max<int64_t>(timeout / 4, 1)), [this] {
    watch_ = 0;
    check_sending();
  });
}

// The send timeout: bytes wait and none left for http.timeout. Once the body is ending, the
// graceful end's own linger (http.timeout too) bounds it.
void FileRangeBody::check_sending() {
  if (ended_told_ || ending_ || !body_->open()) return;
  const int64_t now = ctx_.timers->now_ms();
  // What the client took: written, less what the kernel still holds unacknowledged. Written
  // alone would not do: the kernel takes more only once a third of its send buffer (autotuned to
  // megabytes) is free, which a slow reader may take longer than http.timeout to free.
  const long unacked = net::unacked_send_bytes(body_->fd());
  const uint64_t written = body_->connection().bytes_out();
  const uint64_t taken =
      unacked > 0 && static_cast<uint64_t>(unacked) < written ? written - unacked : written;
  if (taken != last_taken_ || (body_->queued_bytes() == 0 && unacked <= 0)) {  // progress, or the disk
    last_taken_ = taken;
    last_progress_ms_ = now;
  } else if (const int64_t timeout = ctx_.config->http.timeout.count(); now - last_progress_ms_ >= timeout) {
    ctx_.log->info("{} to {}: closed: the client took no byte within http.timeout ({} ms), {} bytes queued",
                   what_, body_->connection().peer(), timeout, body_->queued_bytes());
    body_->close(kSendTimeout);
    return end(kSendTimeout);
  }
  watch_sending();
}

void FileRangeBody::close(std::string_view reason) {
  ended_told_ = true;
  body_->close(reason);
}

void FileRangeBody::push(std::span<const uint8_t> bytes) {
  pos_ += bytes.size();
  body_->push_control(bytes);  // unframed: the response has a Content-Length
  body_->request_flush(true);
}

// Queues what is in memory (the head), then reads the next piece of a run while the queue has
// room; at the end, the graceful close.
void FileRangeBody::pump() {
  if (ended_told_ || reading_ || ending_ || !body_->open()) return;
  const std::vector<uint8_t>& head = source_->head;
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

void FileRangeBody::read_next() {
  const std::vector<uint64_t>& at = source_->run_at;
  const size_t r = static_cast<size_t>(std::upper_bound(at.begin(), at.end(), pos_) - at.begin()) - 1;
  const FileRangeSource::Run& run = source_->runs[r];
  const uint64_t within = pos_ - at[r];
  const size_t n = static_cast<size_t>(std::min<uint64_t>({kPiece, run.length - within, end_ - pos_}));
  reading_ = true;
  const bool queued = work_.submit([source = source_, fd = source_->files[run.file].get(),
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

void FileRangeBody::on_piece(std::vector<uint8_t> bytes, const std::string& error) {
  reading_ = false;
  if (ended_told_ || !body_->open()) return;
  if (!error.empty()) {
    ctx_.log->warn("{}: {}", what_, error);
    body_->close(error);
    return end(error);
  }
  push(bytes);
  pump();
}

// The connection ended by itself, or a read failed.
void FileRangeBody::end(const std::string& reason) {
  if (std::exchange(ended_told_, true)) return;
  // The graceful end after the last byte closes with "stream ended": the body was sent whole.
  const bool whole = ending_ && pos_ >= end_ && reason == "stream ended";
  if (ended_) ended_(whole ? std::string() : reason);
}

}  // namespace rill::server
