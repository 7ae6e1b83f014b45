// net::SendRing with the FlushScheduler over socketpairs: a batch's sends share submissions,
// a connection torn down with a prepared send, a delivery that destroys another connection of
// the batch, and the fallback where the kernel refuses io_uring (a seccomp filter, as in some
// containers). ConnectionTest (connection_test.cpp) runs every connection test through the ring too.
#include <gtest/gtest.h>

#include <event2/event.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rill/net/connection.h"
#include "rill/net/flush_scheduler.h"
#include "rill/net/send_ring.h"

namespace rill::net {
namespace {

struct Recorder final : ConnectionHandler {
  std::vector<std::string> closes;
  std::function<void()> after_close;
  void on_data(std::span<const uint8_t>) override {}
  void on_close(const std::string& reason) override {
    closes.push_back(reason);
    if (after_close) after_close();
  }
};

// A flushable that runs `action` when its batch reaches it.
struct Hook final : Flushable {
  std::function<void()> action;
  void flush() override { action(); }
};

std::string read_all(int fd) {
  std::string got;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return got;
    got.append(buf, static_cast<size_t>(n));
  }
}

class SendRingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    auto ring = SendRing::create(&why);
    if (!ring) GTEST_SKIP() << "no io_uring here: " << why;
    ring_ = ring.get();
    flusher.use_ring(std::move(ring));
  }
  void TearDown() override { conns.clear(); }
  // A connection over a new socketpair; the peer end is kept in peers.
  PlainConnection& add(Recorder& rec) {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    peers.emplace_back(sv[1]);
    conns.push_back(std::make_unique<PlainConnection>(base.get(), flusher, UniqueFd(sv[0]),
                                                      "conn " + std::to_string(conns.size())));
    conns.back()->start(rec);
    return *conns.back();
  }
  void turn() { event_base_loop(base.get(), EVLOOP_NONBLOCK); }

  std::unique_ptr<event_base, decltype(&event_base_free)> base{event_base_new(), &event_base_free};
  FlushScheduler flusher{base.get()};
  SendRing* ring_ = nullptr;
  std::vector<UniqueFd> peers;
  std::vector<std::unique_ptr<PlainConnection>> conns;
};

TEST_F(SendRingTest, ABatchOfConnectionsGoesOutInOneSubmissionPerRingFull) {
  Recorder rec;
  const size_t n = SendRing::kEntries + 88;  // one full ring and a part
  for (size_t i = 0; i < n; ++i) add(rec);
  turn();  // the starts' flushes of empty queues send nothing
  const uint64_t rounds = ring_->submissions();
  for (size_t i = 0; i < n; ++i) {
    conns[i]->queue().push_control(SharedBuffer::copy_of(std::string_view("frame " + std::to_string(i))));
    conns[i]->queue().push_control(SharedBuffer::copy_of(std::string_view("|tail")));
    conns[i]->request_flush();
  }
  turn();
  EXPECT_EQ(ring_->submissions() - rounds, 2u);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(read_all(peers[i].get()), "frame " + std::to_string(i) + "|tail") << i;
    EXPECT_EQ(conns[i]->queued_bytes(), 0u);
    EXPECT_EQ(conns[i]->bytes_out(), 11 + std::to_string(i).size());
  }
  EXPECT_TRUE(rec.closes.empty());
}

TEST_F(SendRingTest, APreparedSendIsSubmittedBeforeItsConnectionIsDestroyed) {
  Recorder rec;
  PlainConnection& doomed = add(rec);
  turn();
  const uint64_t sends = ring_->sends();
  doomed.queue().push_control(SharedBuffer::copy_of(std::string_view("last words")));
  doomed.flush_now();
  Hook killer;  // flushed after the connection in the same batch: its send is prepared, not submitted
  killer.action = [&] { conns.clear(); };
  flusher.request_now(&killer);
  turn();
  EXPECT_TRUE(conns.empty());
  EXPECT_EQ(ring_->sends() - sends, 1u);
  EXPECT_EQ(read_all(peers[0].get()), "last words");  // then EOF: the descriptor closed after the send
  EXPECT_TRUE(rec.closes.empty());                    // destroyed, not failed
}

TEST_F(SendRingTest, ADeliveryMayDestroyAnotherConnectionOfTheBatch) {
  Recorder first_rec, second_rec;
  PlainConnection& first = add(first_rec);
  add(second_rec);
  turn();
  peers[0].reset();  // the first one's send fails: EPIPE
  first_rec.after_close = [&] { conns[1].reset(); };
  first.queue().push_control(SharedBuffer::copy_of(std::string_view("to nobody")));
  first.request_flush();
  conns[1]->queue().push_control(SharedBuffer::copy_of(std::string_view("sent, then destroyed")));
  conns[1]->request_flush();
  turn();
  EXPECT_EQ(first_rec.closes, std::vector<std::string>{"peer closed"});
  EXPECT_EQ(conns[1], nullptr);
  EXPECT_TRUE(second_rec.closes.empty());
  EXPECT_EQ(read_all(peers[1].get()), "sent, then destroyed");
}

TEST_F(SendRingTest, AFullSocketWaitsForWritabilityAndResumesMidBuffer) {
  Recorder rec;
  PlainConnection& c = add(rec);
  const int small = 4096;
  ASSERT_EQ(::setsockopt(c.fd(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
  std::string expected;
  for (int i = 0; i < 8; ++i) expected += std::string(50'000, static_cast<char>('a' + i));
  c.queue().push_control(SharedBuffer::copy_of(std::string_view(expected)));
  c.request_flush();
  turn();
  EXPECT_GT(c.queued_bytes(), 0u);  // -EAGAIN from the ring: the rest waits for the write event
  std::string got;
  for (int i = 0; i < 20000 && got.size() < expected.size(); ++i) {
    got += read_all(peers[0].get());
    turn();
  }
  EXPECT_EQ(got, expected);
  EXPECT_TRUE(rec.closes.empty());
}

// Where io_uring_setup is refused (seccomp in a container, kernel.io_uring_disabled) create()
// says why; the worker then logs it and keeps sendmsg. Checked in a child with a seccomp filter.
TEST(SendRingFallback, ARefusedIoUringSaysWhy) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog prog{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(10);
    if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) ::_exit(11);
    std::string why;
    auto ring = SendRing::create(&why);
    if (ring) ::_exit(12);
    if (why != "io_uring_setup: Operation not permitted") ::_exit(13);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10/11: seccomp not installed, 12: a ring despite the filter, "
                                       "13: another reason";
}

}  // namespace
}  // namespace rill::net
