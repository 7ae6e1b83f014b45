#include "client.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "rill/protocol/error.h"
#include "rill/protocol/flv_tag.h"

namespace rill::loadgen {

Client::~Client() {
  if (fd_ >= 0) {
    ctx_.loop.remove(fd_);
    ::close(fd_);
  }
}

void Client::start() {
  int64_t now = now_ns();
  if (!rec_.start_ns) rec_.start_ns = now;
  fd_ = ::socket(ep_.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    fail(errno == EMFILE || errno == ENFILE ? "socket_fd_limit" : "socket");
    return;
  }
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int rc = ::connect(fd_, reinterpret_cast<const sockaddr*>(&ep_.addr), ep_.len);
  if (rc < 0 && errno != EINPROGRESS) {
    fail(errno == ECONNREFUSED ? "connect_refused" : errno == EADDRNOTAVAIL ? "connect_no_port" : "connect");
    return;
  }
  connecting_ = true;
  if (!ctx_.loop.add(fd_, this)) {
    fail("epoll_add");
    return;
  }
}

void Client::on_io(uint32_t events) {
  if (fd_ < 0) return;
  if (connecting_) {
    if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) return;
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err) {
      fail(err == ECONNREFUSED ? "connect_refused" : err == ETIMEDOUT ? "connect_timeout" : "connect");
      return;
    }
    connecting_ = false;
    on_connected();
    if (fd_ < 0) return;
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) read_all(events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR));
  if (fd_ >= 0 && !connecting_ && (events & EPOLLOUT) && queued_) flush();
}

void Client::read_all(bool until_eof) {
  std::span<uint8_t> buf = ctx_.loop.scratch();
  while (fd_ >= 0) {
    ssize_t n = ::read(fd_, buf.data(), buf.size());
    if (n > 0) {
      if (rec_.is_player()) {  // (a publisher's record counts what it sends)
        rec_.on_bytes(static_cast<uint64_t>(n), now_ns());
        ctx_.rx_bytes.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
      }
      on_data({buf.data(), static_cast<size_t>(n)});
      if (static_cast<size_t>(n) < buf.size() && !until_eof) {
        // Short read: the socket is drained, one more read() would only say EAGAIN. (When the
        // peer has also closed, EPOLLRDHUP is in this event and we read on to the EOF.)
        return;
      }
      continue;
    }
    if (n == 0) {
      on_peer_closed();
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    if (errno == ECONNRESET) {
      on_peer_closed();
    } else {
      fail("read");
    }
    return;
  }
}

void Client::on_peer_closed() { fail("eof"); }

void Client::send(BufferRef buf) {
  if (fd_ < 0 || !buf || buf.size() == 0) return;
  queued_ += buf.size();
  out_.push_back(std::move(buf));
  if (!connecting_ && queued_ == out_.back().size()) flush();  // queue was empty: try now
}

void Client::send_copy(std::span<const uint8_t> bytes) { send(SharedBuffer::copy_of(bytes)); }

void Client::flush() {
  while (fd_ >= 0 && queued_) {
    iovec iov[16];
    int n = 0;
    for (size_t i = 0; i < out_.size() && n < 16; ++i, ++n) {
      size_t off = i == 0 ? out_off_ : 0;
      iov[n].iov_base = const_cast<uint8_t*>(out_[i].data() + off);
      iov[n].iov_len = out_[i].size() - off;
    }
    ssize_t w = ::writev(fd_, iov, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;  // EPOLLOUT (edge) will call again
      fail(errno == EPIPE || errno == ECONNRESET ? "eof" : "write");
      return;
    }
    size_t left = static_cast<size_t>(w);
    queued_ -= left;
    written_ += left;
    if (!rec_.is_player()) {
      rec_.on_bytes(left, now_ns());
      ctx_.tx_bytes.fetch_add(left, std::memory_order_relaxed);
    }
    size_t done = 0;
    while (left) {
      size_t avail = out_[done].size() - out_off_;
      if (left >= avail) {
        left -= avail;
        out_off_ = 0;
        ++done;
      } else {
        out_off_ += left;
        left = 0;
      }
    }
    out_.erase(out_.begin(), out_.begin() + static_cast<std::ptrdiff_t>(done));
    on_written(written_);
  }
}

void Client::mark_streaming(int64_t now) {
  if (rec_.streaming_ns) return;
  rec_.streaming_ns = now;
  counted_streaming_ = true;
  ctx_.streaming.fetch_add(1, std::memory_order_relaxed);
}

void Client::count_video(uint32_t timestamp, std::span<const uint8_t> head, int64_t now) {
  ++rec_.video;
  if (!rec_.first_video_ns) rec_.first_video_ns = now;
  rec_.on_media(now);
  protocol::VideoTagInfo info;
  try {
    info = protocol::parse_video_tag(head);
  } catch (const protocol::ProtocolError&) {
    return;  // unknown codec or short: counted, not classified
  }
  if (info.is_keyframe && !rec_.first_key_ns) rec_.first_key_ns = now;
  if (ctx_.board && info.is_coded_frame) {
    if (auto sent = ctx_.board->lookup(timestamp); sent && *sent >= rec_.play_ns) {
      ctx_.latency.add_ns(now - *sent);
    }
  }
}

void Client::close_socket() {
  if (fd_ >= 0) {
    ctx_.loop.remove(fd_);
    ::close(fd_);
    fd_ = -1;
  }
  connecting_ = false;
  out_.clear();
  out_.shrink_to_fit();
  out_off_ = 0;
  queued_ = 0;
}

void Client::fail(std::string_view kind, std::string_view detail) {
  if (rec_.failed || rec_.dropped) {
    close_socket();
    return;
  }
  ctx_.error(kind, detail);
  if (rec_.streaming_ns) {
    rec_.dropped = true;
  } else {
    rec_.failed = true;
  }
  rec_.closed_ns = now_ns();
  if (counted_streaming_) {
    counted_streaming_ = false;
    ctx_.streaming.fetch_sub(1, std::memory_order_relaxed);
  }
  close_socket();
}

void Client::check_setup_timeout(int64_t now, int64_t timeout_ns) {
  if (rec_.streaming_ns || rec_.failed || !rec_.start_ns) return;
  if (now - rec_.start_ns > timeout_ns) fail("setup_timeout");
}

void Client::close_at_end() { close_socket(); }

}  // namespace rill::loadgen
