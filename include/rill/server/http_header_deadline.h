#pragma once
// HttpHeaderDeadline: a connection must deliver its first complete request within http.timeout
// of being accepted. evhttp's own timeout is an idle timeout — every byte restarts it — so a
// client sending one header byte per second (slowloris) would hold its connection forever.
// Checked once a second; an expired connection is freed (closed) with a log line.
#include <cstdint>
#include <unordered_map>

#include "rill/net/server_context.h"

struct evhttp_connection;
struct event;

namespace rill::server {

class HttpHeaderDeadline {
 public:
  HttpHeaderDeadline(net::ServerContext& ctx, int64_t limit_ms);
  ~HttpHeaderDeadline();
  HttpHeaderDeadline(const HttpHeaderDeadline&) = delete;
  HttpHeaderDeadline& operator=(const HttpHeaderDeadline&) = delete;

  void watch(evhttp_connection* conn);   // accepted: the clock starts
  void forget(evhttp_connection* conn);  // a request arrived, or the connection closed

 private:
  static void on_timer(int, short, void* arg);
  void sweep();

  net::ServerContext& ctx_;
  int64_t limit_ms_;
  std::unordered_map<evhttp_connection*, int64_t> accepted_ms_;
  event* timer_ = nullptr;
};

}  // namespace rill::server
