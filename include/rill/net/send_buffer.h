#pragma once
// How much of a player's media the kernel may hold. Loopback and LAN sockets autotune the send
// buffer to several MiB (net.ipv4.tcp_wmem), so a player that stopped reading takes that much
// media before Rill's own output queue — whose soft_duration / hard_duration bounds skip to the
// next keyframe and then disconnect — sees anything: the bounds would bite tens of seconds late.
// Two ways to bound it (docs/operations.md, "Slow players"):
//  - SO_SNDBUF (`send_buffer`): a fixed buffer (the kernel doubles it for its bookkeeping and
//    turns autotuning off). Simple, but it bounds the bytes in flight too: a connection then
//    carries at most about twice the value per round trip.
//  - TCP_NOTSENT_LOWAT (`notsent_lowat`): the kernel takes no more once this many bytes are
//    queued but not yet sent; what is in flight still grows with the path (autotuning), so a
//    far, fast player keeps its bandwidth while a stalled one is still bounded.
#include <cstddef>

namespace rill::net {

// SO_SNDBUF = bytes on fd (0: leave the kernel's autotuning). False (errno set) on failure.
bool set_send_buffer(int fd, size_t bytes);
// TCP_NOTSENT_LOWAT = bytes on fd (0: leave it unset). False (errno set) on failure, e.g. on a
// socket that is not TCP.
bool set_notsent_lowat(int fd, size_t bytes);

// Bytes the kernel holds for fd that the peer has not acknowledged yet, sent or not (SIOCOUTQ):
// what a connection wrote minus this is what its client took. -1 (errno set) when the kernel
// cannot tell.
long unacked_send_bytes(int fd);

// Both, as a player's listener configures them (`rtmp.*` / `http.*`).
inline void limit_kernel_send_queue(int fd, size_t send_buffer, size_t notsent_lowat) {
  set_send_buffer(fd, send_buffer);
  set_notsent_lowat(fd, notsent_lowat);
}

}  // namespace rill::net
