#pragma once
// The listening sockets a worker serves and the one accept loop they all use.
//
// The master binds every listen address once per worker slot (SO_REUSEPORT) and hands a worker
// its slot's sockets as a list of ListenSockets. Each becomes an Acceptor on the worker's event
// base: it accepts on the worker's own copy of the socket (F_DUPFD_CLOEXEC; the master keeps the
// original for a respawn of the slot), until EAGAIN or 1024 connections per wake-up (under a
// connection storm the backlog empties every loop turn), non-blocking and close-on-exec, and hands
// each connection over with its peer address. Running out of descriptors (EMFILE, ENFILE) is
// logged; the connection stays queued in the kernel until one is free.
#include <spdlog/logger.h>
#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "rill/net/socket.h"

struct event;
struct event_base;

namespace rill::net {

// What a listening socket serves. TLS is a property of the socket, not another service.
enum class ListenService : uint8_t { Rtmp, Http, Api };
const char* to_string(ListenService s);  // "rtmp", "http", "api"

struct ListenSocket {
  ListenService service = ListenService::Rtmp;
  bool tls = false;  // rtmp.tls_listen, http.tls_listen, api.tls_listen
  int fd = -1;       // the master's socket: bound and listening
};

class Acceptor {
 public:
  using OnAccept = std::function<void(UniqueFd fd, const sockaddr_storage& peer)>;
  // Starts accepting at once. On failure (no copy of the socket, no event) it logs why, naming
  // `what` ("rtmp", "http", ...), and ok() is false.
  Acceptor(event_base* base, int listen_fd, std::string what, std::shared_ptr<spdlog::logger> log,
           OnAccept on_accept);
  ~Acceptor();
  Acceptor(const Acceptor&) = delete;
  Acceptor& operator=(const Acceptor&) = delete;

  bool ok() const { return ev_ != nullptr; }
  // Stops accepting and closes this worker's copy (the master's socket stays): connections the
  // kernel queues from now on go to the slot's next worker. Idempotent.
  void stop();

 private:
  static void on_readable(int fd, short, void* arg);
  void accept_all();

  UniqueFd fd_;
  event* ev_ = nullptr;
  std::string what_;
  std::shared_ptr<spdlog::logger> log_;
  OnAccept on_accept_;
};

}  // namespace rill::net
