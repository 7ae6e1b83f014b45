#include "http_flv_client.h"

#include <stdexcept>
#include <string>

#include "rill/protocol/error.h"
#include "rill/protocol/flv_tag.h"

namespace rill::loadgen {

using namespace rill::protocol;

HttpFlvClient::HttpFlvClient(ThreadContext& ctx, ClientRecord& rec, const Endpoint& ep, Url url, bool http10)
    : Client(ctx, rec, ep), url_(std::move(url)), http10_(http10) {
  rec_.kind = ClientRecord::Kind::FlvPlayer;
}

std::string HttpFlvClient::request(const Url& url, bool http10) {
  std::string r = "GET " + url.path + (http10 ? " HTTP/1.0\r\n" : " HTTP/1.1\r\n");
  r += "Host: " + url.host_header() + "\r\n";
  r += "User-Agent: rill-bench\r\nAccept: */*\r\n";
  r += "\r\n";
  return r;
}

void HttpFlvClient::on_connected() {
  std::string r = request(url_, http10_);
  rec_.play_ns = now_ns();
  send_copy({reinterpret_cast<const uint8_t*>(r.data()), r.size()});
}

void HttpFlvClient::on_data(std::span<const uint8_t> bytes) {
  try {
    while (!bytes.empty() && open()) {
      size_t used = http_.feed(bytes, *this);
      bytes = bytes.subspan(used);
      if (http_.complete()) break;  // on_complete already failed the connection
    }
  } catch (const ProtocolError& e) {
    fail("flv_parse", e.what());
  } catch (const std::exception& e) {
    fail("http_parse", e.what());
  }
}

void HttpFlvClient::on_peer_closed() {
  try {
    http_.on_eof(*this);
  } catch (const std::runtime_error&) {
  }
  fail("eof");
}

void HttpFlvClient::on_head(const HttpHead& head) {
  if (head.status != 200) {
    fail("http_" + std::to_string(head.status));
    return;
  }
  mark_streaming(now_ns());
}

void HttpFlvClient::on_body(std::span<const uint8_t> bytes) {
  if (open()) flv_.feed(bytes, *this);
}

void HttpFlvClient::on_complete() {
  // A live stream has no end: the server ended it.
  if (open()) fail("http_end");
}

void HttpFlvClient::on_tag(const ScannedTag& tag) {
  if (tag.type == kFlvTagAudio) {
    ++rec_.audio;
  } else if (tag.type == kFlvTagVideo) {
    count_video(tag.timestamp, tag.head, now_ns());
  }
}

}  // namespace rill::loadgen
