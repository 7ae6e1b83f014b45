// net::set_send_buffer / set_notsent_lowat on real loopback TCP sockets: what the kernel keeps.
#include "rill/net/send_buffer.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "rill/net/socket.h"

namespace rill::net {
namespace {

int int_option(int fd, int level, int name) {
  int v = -1;
  socklen_t len = sizeof v;
  EXPECT_EQ(::getsockopt(fd, level, name, &v, &len), 0);
  return v;
}

// A TCP socket connecting to a listener on 127.0.0.1 (net::connect_tcp, as the cluster's clients
// do); the listener closes on return: only the socket's own options are checked.
UniqueFd loopback_tcp() {
  UniqueFd ls(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  EXPECT_EQ(::bind(ls.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::listen(ls.get(), 1), 0);
  EXPECT_EQ(::getsockname(ls.get(), reinterpret_cast<sockaddr*>(&a), &len), 0);
  std::string error;
  UniqueFd fd = connect_tcp(reinterpret_cast<sockaddr*>(&a), sizeof a, &error);
  EXPECT_TRUE(fd) << error;
  return fd;
}

TEST(SendBuffer, NotsentLowatLeavesTheBufferAutotuned) {
  const UniqueFd owned = loopback_tcp();
  const int fd = owned.get();
  const int autotuned = int_option(fd, SOL_SOCKET, SO_SNDBUF);
  limit_kernel_send_queue(fd, 0, 16 * 1024);
  EXPECT_EQ(int_option(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT), 16 * 1024);
  EXPECT_EQ(int_option(fd, SOL_SOCKET, SO_SNDBUF), autotuned);
}

TEST(SendBuffer, SendBufferIsFixedAndZeroLeavesBothAlone) {
  const UniqueFd owned = loopback_tcp();
  const int fd = owned.get();
  const int lowat = int_option(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT);
  limit_kernel_send_queue(fd, 32 * 1024, 0);
  EXPECT_EQ(int_option(fd, SOL_SOCKET, SO_SNDBUF), 64 * 1024);  // the kernel doubles it
  EXPECT_EQ(int_option(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT), lowat);
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
