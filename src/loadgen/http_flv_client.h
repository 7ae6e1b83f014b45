#pragma once
// rill-bench: one HTTP-FLV player: GET http://host/app/stream.flv (HTTP/1.1, or HTTP/1.0 with
// --http10), then an endless body - chunked or close-delimited - that is an FLV stream: the
// 9-byte header, PreviousTagSize0, then tags. Tags are counted and classified from their first
// bytes like RTMP media; nothing is kept.
#include <cstdint>
#include <span>

#include "client.h"
#include "flv_scanner.h"
#include "http_response.h"
#include "url.h"

namespace rill::loadgen {

class HttpFlvClient final : public Client, private HttpResponseParser::Sink, private FlvScanner::Sink {
 public:
  HttpFlvClient(ThreadContext& ctx, ClientRecord& rec, const Endpoint& ep, Url url, bool http10);

  // The request line and headers (exposed for tests).
  static std::string request(const Url& url, bool http10);

 private:
  void on_connected() override;
  void on_data(std::span<const uint8_t> bytes) override;
  void on_peer_closed() override;

  void on_head(const HttpHead& head) override;
  void on_body(std::span<const uint8_t> bytes) override;
  void on_complete() override;
  void on_tag(const ScannedTag& tag) override;

  Url url_;
  bool http10_;
  HttpResponseParser http_;
  FlvScanner flv_;
};

}  // namespace rill::loadgen
