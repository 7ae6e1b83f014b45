#include "http_response.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <stdexcept>

namespace rill::loadgen {

const std::string* HttpHead::find(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return &v;
  }
  return nullptr;
}

void HttpResponseParser::reset(bool head_request) {
  state_ = State::Head;
  mode_ = BodyMode::None;
  head_request_ = head_request;
  keep_alive_ = true;
  head_buf_.clear();
  line_.clear();
  left_ = 0;
  head_ = HttpHead{};
}

static std::string lower_ascii(std::string_view s) {
  std::string r(s);
  for (auto& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

static std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

void HttpResponseParser::parse_head(Sink& sink) {
  std::string_view text = head_buf_;
  size_t eol = text.find('\n');
  std::string_view status_line = trim_ows(text.substr(0, eol));
  // "HTTP/1.1 200 OK"
  if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." || status_line[8] != ' ') {
    throw std::runtime_error("bad status line '" + std::string(status_line.substr(0, 64)) + "'");
  }
  head_.version_minor = status_line[7] - '0';
  int status = 0;
  auto r = std::from_chars(status_line.data() + 9, status_line.data() + 12, status);
  if (r.ec != std::errc() || status < 100 || status > 999) throw std::runtime_error("bad status code");
  head_.status = status;
  head_.reason = std::string(trim_ows(status_line.substr(std::min<size_t>(12, status_line.size()))));
  size_t pos = eol + 1;
  while (pos < text.size()) {
    size_t e = text.find('\n', pos);
    if (e == std::string_view::npos) e = text.size();
    std::string_view line = trim_ows(text.substr(pos, e - pos));
    pos = e + 1;
    if (line.empty()) break;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) throw std::runtime_error("bad header line");
    head_.headers.emplace_back(lower_ascii(trim_ows(line.substr(0, colon))), std::string(trim_ows(line.substr(colon + 1))));
  }
  std::string conn = head_.find("connection") ? lower_ascii(*head_.find("connection")) : "";
  keep_alive_ = head_.version_minor >= 1 ? conn.find("close") == std::string::npos
                                         : conn.find("keep-alive") != std::string::npos;
  const std::string* te = head_.find("transfer-encoding");
  const std::string* cl = head_.find("content-length");
  if (head_request_ || status == 204 || status == 304 || status < 200) {
    mode_ = BodyMode::None;
  } else if (te && lower_ascii(*te).find("chunked") != std::string::npos) {
    mode_ = BodyMode::Chunked;
  } else if (cl) {
    uint64_t n = 0;
    auto rr = std::from_chars(cl->data(), cl->data() + cl->size(), n);
    if (rr.ec != std::errc() || rr.ptr != cl->data() + cl->size()) throw std::runtime_error("bad Content-Length");
    mode_ = BodyMode::Length;
    left_ = n;
  } else {
    mode_ = BodyMode::Close;
    keep_alive_ = false;
  }
  sink.on_head(head_);
  switch (mode_) {
    case BodyMode::None: state_ = State::Done; break;
    case BodyMode::Length: state_ = left_ ? State::Body : State::Done; break;
    case BodyMode::Chunked: state_ = State::ChunkSize; break;
    case BodyMode::Close: state_ = State::Body; break;
  }
  if (state_ == State::Done) sink.on_complete();
}

// One complete line of the chunked framing (RFC 9112 §7.1): a chunk size, the CRLF that ends a
// chunk's data, or a trailer line (an empty one ends the body).
void HttpResponseParser::on_chunk_line(std::string_view line, Sink& sink) {
  if (state_ == State::ChunkDataEnd) {
    if (!line.empty()) throw std::runtime_error("missing CRLF after chunk data");
    state_ = State::ChunkSize;
  } else if (state_ == State::ChunkSize) {
    std::string_view hex = trim_ows(line.substr(0, line.find(';')));
    uint64_t n = 0;
    auto r = std::from_chars(hex.data(), hex.data() + hex.size(), n, 16);
    if (hex.empty() || r.ec != std::errc() || r.ptr != hex.data() + hex.size()) {
      throw std::runtime_error("bad chunk size '" + std::string(hex.substr(0, 32)) + "'");
    }
    left_ = n;
    state_ = n ? State::ChunkData : State::Trailer;
  } else if (line.empty()) {  // end of trailers
    state_ = State::Done;
    sink.on_complete();
  }
}

size_t HttpResponseParser::feed(std::span<const uint8_t> in, Sink& sink) {
  const char* p = reinterpret_cast<const char*>(in.data());
  const char* end = p + in.size();
  const char* begin = p;
  while (p < end && state_ != State::Done) {
    switch (state_) {
      case State::Head: {
        // Append up to the end of the head ("\r\n\r\n" or "\n\n").
        const char* nl = static_cast<const char*>(std::memchr(p, '\n', size_t(end - p)));
        const char* stop = nl ? nl + 1 : end;
        head_buf_.append(p, stop);
        p = stop;
        if (head_buf_.size() > kMaxHead) throw std::runtime_error("response head over 16 KiB");
        size_t n = head_buf_.size();
        if (nl && (head_buf_.ends_with("\n\n") || head_buf_.ends_with("\r\n\r\n") || n == 1 ||
                   (n == 2 && head_buf_ == "\r\n"))) {
          if (trim_ows(head_buf_).empty()) {  // stray empty lines before the status line
            head_buf_.clear();
            break;
          }
          parse_head(sink);
        }
        break;
      }
      case State::Body: {
        size_t n = size_t(end - p);
        if (mode_ == BodyMode::Length) n = static_cast<size_t>(std::min<uint64_t>(n, left_));
        sink.on_body({reinterpret_cast<const uint8_t*>(p), n});
        p += n;
        if (mode_ == BodyMode::Length) {
          left_ -= n;
          if (left_ == 0) {
            state_ = State::Done;
            sink.on_complete();
          }
        }
        break;
      }
      case State::ChunkSize:
      case State::ChunkDataEnd:
      case State::Trailer: {
        const char* nl = static_cast<const char*>(std::memchr(p, '\n', size_t(end - p)));
        const char* stop = nl ? nl + 1 : end;
        line_.append(p, stop);
        p = stop;
        if (line_.size() > 1024) throw std::runtime_error("chunk line over 1 KiB");
        if (!nl) break;
        on_chunk_line(trim_ows(line_), sink);
        line_.clear();
        break;
      }
      case State::ChunkData: {
        size_t n = static_cast<size_t>(std::min<uint64_t>(size_t(end - p), left_));
        sink.on_body({reinterpret_cast<const uint8_t*>(p), n});
        p += n;
        left_ -= n;
        if (left_ == 0) state_ = State::ChunkDataEnd;
        break;
      }
      case State::Done:
        break;
    }
  }
  return size_t(p - begin);
}

void HttpResponseParser::on_eof(Sink& sink) {
  if (state_ == State::Done) return;
  if (state_ == State::Body && mode_ == BodyMode::Close) {
    state_ = State::Done;
    sink.on_complete();
    return;
  }
  throw std::runtime_error(state_ == State::Head ? "connection closed before the response head"
                                                 : "connection closed in the middle of the body");
}

}  // namespace rill::loadgen
