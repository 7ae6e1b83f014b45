#pragma once
// rill-bench: an incremental HTTP/1.x response parser (RFC 9112): status line, headers, and a body
// delimited by Content-Length, chunked transfer coding, or the connection close. Body bytes are
// handed out as they arrive, never buffered, so a player can parse an endless HTTP-FLV stream.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rill::loadgen {

struct HttpHead {
  int version_minor = 1;  // HTTP/1.x
  int status = 0;
  std::string reason;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  const std::string* find(std::string_view name) const;      // lower-case name
};

class HttpResponseParser {
 public:
  static constexpr size_t kMaxHead = 16 * 1024;

  class Sink {
   public:
    virtual void on_head(const HttpHead& head) = 0;
    virtual void on_body(std::span<const uint8_t> bytes) = 0;
    virtual void on_complete() = 0;

   protected:
    ~Sink() = default;
  };

  // head_request: the response to a HEAD has no body.
  void reset(bool head_request = false);

  // Consumes bytes and returns how many: all of them, unless the response completed, in which
  // case the rest belongs to the next response (keep-alive). Throws std::runtime_error on a
  // malformed response.
  size_t feed(std::span<const uint8_t> in, Sink& sink);
  // The connection closed: completes a close-delimited body; throws if the response was cut short.
  void on_eof(Sink& sink);

  bool complete() const { return state_ == State::Done; }
  bool started() const { return state_ != State::Head || !head_buf_.empty(); }
  // After the head: whether the connection stays open after this response.
  bool keep_alive() const { return keep_alive_; }
  bool chunked() const { return mode_ == BodyMode::Chunked; }

 private:
  enum class State { Head, Body, ChunkSize, ChunkData, ChunkDataEnd, Trailer, Done };
  enum class BodyMode { None, Length, Chunked, Close };
  void parse_head(Sink& sink);
  void on_chunk_line(std::string_view line, Sink& sink);

  State state_ = State::Head;
  BodyMode mode_ = BodyMode::None;
  bool head_request_ = false;
  bool keep_alive_ = true;
  std::string head_buf_;
  std::string line_;  // chunk-size / trailer line being assembled
  uint64_t left_ = 0;  // body or chunk bytes left
  HttpHead head_;
};

}  // namespace rill::loadgen
