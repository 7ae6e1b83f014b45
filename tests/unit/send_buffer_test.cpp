// net::set_send_buffer / set_notsent_lowat on real loopback TCP sockets: what the kernel keeps.
#include "rill/net/send_buffer.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace rill::net {
namespace {

int int_option(int fd, int level, int name) {
  int v = -1;
  socklen_t len = sizeof v;
  EXPECT_EQ(::getsockopt(fd, level, name, &v, &len), 0);
  return v;
}

// A connected TCP socket on 127.0.0.1 (the accepting end is closed with the listener).
int loopback_tcp() {
  const int ls = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  EXPECT_EQ(::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::listen(ls, 1), 0);
  EXPECT_EQ(::getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ::close(ls);
  return fd;
}

TEST(SendBuffer, NotsentLowatLeavesTheBufferAutotuned) {
  const int fd = loopback_tcp();
  const int autotuned = int_option(fd, SOL_SOCKET, SO_SNDBUF);
  limit_kernel_send_queue(fd, 0, 16 * 1024);
  EXPECT_EQ(int_option(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT), 16 * 1024);
  EXPECT_EQ(int_option(fd, SOL_SOCKET, SO_SNDBUF), autotuned);
  ::close(fd);
}

TEST(SendBuffer, SendBufferIsFixedAndZeroLeavesBothAlone) {
  const int fd = loopback_tcp();
  const int lowat = int_option(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT);
  limit_kernel_send_queue(fd, 32 * 1024, 0);
  EXPECT_EQ(int_option(fd, SOL_SOCKET, SO_SNDBUF), 64 * 1024);  // the kernel doubles it
  EXPECT_EQ(int_option(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT), lowat);
  ::close(fd);
}

TEST(SendBuffer, NotsentLowatFailsCleanlyOffTcp) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  EXPECT_FALSE(set_notsent_lowat(sv[0], 4096));
  EXPECT_TRUE(set_notsent_lowat(sv[0], 0));  // nothing asked, nothing done
  ::close(sv[0]);
  ::close(sv[1]);
}

}  // namespace
}  // namespace rill::net
