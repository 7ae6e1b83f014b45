#pragma once
// The kernel send buffer of a player's socket. Loopback and LAN sockets autotune it to several
// MiB (net.ipv4.tcp_wmem), so a player that stopped reading takes that much media before
// Rill's own output queue — whose soft_duration / hard_duration bounds skip to the next keyframe
// and then disconnect — sees anything: the bounds would bite tens of seconds late. A fixed
// SO_SNDBUF (the kernel doubles it for its bookkeeping and turns autotuning off) keeps the
// kernel's share to a fraction of a second of media, so the queue bounds hold to about a second.
#include <cstddef>

namespace rill::net {

// SO_SNDBUF = bytes on fd (0: leave the kernel's autotuning). False (errno set) on failure.
bool set_send_buffer(int fd, size_t bytes);

}  // namespace rill::net
