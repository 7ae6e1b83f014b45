// rill-sendcost: what one send to a player costs the sending thread, by submission method, on
// loopback TCP (docs/benchmarks-submission.md, scripts/bench-send). N connected socket pairs; each
// round writes `size` bytes (in `iovs` buffers) to every one of them, then sleeps 20 ms (a merge
// tick) while a reader thread on another core drains them. Reports the sender's thread CPU
// (user + system, from getrusage) per send. Methods:
//   sendmsg   one sendmsg per connection per round (what Rill does)
//   io_uring  one IORING_OP_SENDMSG per connection, all submitted with one io_uring_enter
//             (MSG_DONTWAIT: a full socket completes with -EAGAIN, as a non-blocking sendmsg)
//   zerocopy  sendmsg with MSG_ZEROCOPY (SO_ZEROCOPY), completions reaped from the error queue
// Loopback charges the receiver's TCP work to the sender, as it does for the server in
// scripts/bench, so the figures compare methods, not absolute costs on a NIC.
#include <arpa/inet.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

double thread_cpu_s() {
  rusage r{};
  getrusage(RUSAGE_THREAD, &r);
  return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);  // best effort: a 1-core machine runs unpinned
}

[[noreturn]] void die(const char* what) {
  std::perror(what);
  std::exit(1);
}

struct Options {
  std::string method = "sendmsg";
  int connections = 1000;
  int size = 4000;
  int rounds = 200;
  int iovs = 4;
  int send_buffer = 32 * 1024;  // Rill's default rtmp.send_buffer
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (k == "--method") o.method = argv[i + 1];
    else if (k == "-n") o.connections = v;
    else if (k == "--size") o.size = v;
    else if (k == "--rounds") o.rounds = v;
    else if (k == "--iovs") o.iovs = v;
    else if (k == "--send-buffer") o.send_buffer = v;
    else {
      std::fprintf(stderr, "usage: rill-sendcost [--method sendmsg|io_uring|zerocopy] [-n N] [--size B] "
                           "[--iovs K] [--rounds R] [--send-buffer B]\n");
      std::exit(2);
    }
  }
  if (o.connections < 1 || o.size < o.iovs || o.iovs < 1 || o.rounds < 1) die("bad options");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const int n = o.connections;
  const int ls = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof addr;
  if (bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof addr) || listen(ls, 4096) ||
      getsockname(ls, reinterpret_cast<sockaddr*>(&addr), &alen))
    die("listen");
  std::vector<int> readers(n), senders(n);
  const int one = 1;
  for (int i = 0; i < n; ++i) {
    readers[i] = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(readers[i], reinterpret_cast<sockaddr*>(&addr), sizeof addr)) die("connect");
    senders[i] = accept(ls, nullptr, nullptr);
    if (senders[i] < 0) die("accept");
    fcntl(readers[i], F_SETFL, O_NONBLOCK);
    fcntl(senders[i], F_SETFL, O_NONBLOCK);
    if (o.send_buffer > 0) setsockopt(senders[i], SOL_SOCKET, SO_SNDBUF, &o.send_buffer, sizeof o.send_buffer);
    if (o.method == "zerocopy" && setsockopt(senders[i], SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one))
      die("SO_ZEROCOPY");
  }
  close(ls);

  std::atomic<bool> stop{false};
  std::thread drain([&] {
    pin_to(1);
    const int ep = epoll_create1(0);
    for (int fd : readers) {
      epoll_event e{};
      e.events = EPOLLIN;
      e.data.fd = fd;
      epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
    }
    std::vector<epoll_event> ready(256);
    std::vector<char> buf(1 << 16);
    while (!stop.load()) {
      const int k = epoll_wait(ep, ready.data(), static_cast<int>(ready.size()), 50);
      for (int j = 0; j < k; ++j)
        while (read(ready[j].data.fd, buf.data(), buf.size()) > 0) {
        }
    }
    close(ep);
  });

  pin_to(0);
  io_uring ring{};
  if (o.method == "io_uring") {
    const int err = io_uring_queue_init(4096, &ring, 0);
    if (err < 0) {
      std::fprintf(stderr, "io_uring_queue_init: %s (a kernel or seccomp policy without io_uring)\n",
                   std::strerror(-err));
      stop = true;
      drain.join();
      return 1;
    }
  }
  std::vector<char> data(static_cast<size_t>(o.size), 'x');
  std::vector<iovec> iov(static_cast<size_t>(n) * o.iovs);
  std::vector<msghdr> msgs(n);
  const size_t piece = static_cast<size_t>(o.size / o.iovs);
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < o.iovs; ++k) iov[i * o.iovs + k] = {data.data() + k * piece, piece};
    msgs[i].msg_iov = &iov[i * o.iovs];
    msgs[i].msg_iovlen = o.iovs;
  }
  long sent = 0, short_or_failed = 0, copied = 0;
  const double cpu0 = thread_cpu_s();
  for (int r = 0; r < o.rounds; ++r) {
    if (o.method == "io_uring") {
      for (int i = 0; i < n;) {
        int batch = 0;
        for (; i < n && batch < 4096; ++i, ++batch) {
          io_uring_sqe* sqe = io_uring_get_sqe(&ring);
          io_uring_prep_sendmsg(sqe, senders[i], &msgs[i], MSG_NOSIGNAL | MSG_DONTWAIT);
        }
        io_uring_submit_and_wait(&ring, static_cast<unsigned>(batch));
        unsigned head = 0, seen = 0;
        io_uring_cqe* cqe = nullptr;
        io_uring_for_each_cqe(&ring, head, cqe) {
          if (cqe->res > 0) sent += cqe->res;
          if (cqe->res != o.size) ++short_or_failed;
          ++seen;
        }
        io_uring_cq_advance(&ring, seen);
      }
    } else {
      const int flags = MSG_NOSIGNAL | (o.method == "zerocopy" ? MSG_ZEROCOPY : 0);
      for (int i = 0; i < n; ++i) {
        const ssize_t w = sendmsg(senders[i], &msgs[i], flags);
        if (w > 0) sent += w;
        if (w != o.size) ++short_or_failed;
      }
      if (o.method == "zerocopy") {
        // The buffers may be reused once the kernel says so; loopback copies them anyway
        // (SO_EE_CODE_ZEROCOPY_COPIED), which is what this counts.
        for (int fd : senders) {
          char control[128];
          msghdr m{};
          m.msg_control = control;
          m.msg_controllen = sizeof control;
          while (recvmsg(fd, &m, MSG_ERRQUEUE) >= 0) {
            if (cmsghdr* c = CMSG_FIRSTHDR(&m)) {
              auto* ee = reinterpret_cast<sock_extended_err*>(CMSG_DATA(c));
              if (ee->ee_code & SO_EE_CODE_ZEROCOPY_COPIED) copied += ee->ee_data - ee->ee_info + 1;
            }
            m.msg_controllen = sizeof control;
          }
        }
      }
    }
    usleep(20000);
  }
  const double cpu = thread_cpu_s() - cpu0;
  stop = true;
  drain.join();
  const double sends = static_cast<double>(n) * o.rounds;
  std::printf("method=%s connections=%d size=%d iovs=%d rounds=%d cpu_s=%.3f us_per_send=%.2f "
              "mbytes=%.1f short_or_failed=%ld zerocopy_copied=%ld\n",
              o.method.c_str(), n, o.size, o.iovs, o.rounds, cpu, cpu * 1e6 / sends, static_cast<double>(sent) / 1e6,
              short_or_failed, copied);
  if (o.method == "io_uring") io_uring_queue_exit(&ring);
  for (int fd : senders) close(fd);
  for (int fd : readers) close(fd);
  return 0;
}
