#include "rill/protocol/worker_link_frame.h"

#include <algorithm>
#include <cstring>

#include "rill/protocol/error.h"

namespace rill::protocol {

namespace {

void put_u32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

uint32_t get_u32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

bool valid_name(std::string_view s) {
  if (s.empty() || s.size() > kLinkMaxName || s == "." || s == "..") return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.' || c == '~';
  });
}

// "app/name" -> app, name.
void split_key(std::string_view key, LinkRequest& r) {
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos) throw ProtocolError("relay request: expected APP/NAME, got '" + std::string(key) + "'");
  std::string_view app = key.substr(0, slash), name = key.substr(slash + 1);
  if (!valid_name(app) || !valid_name(name)) throw ProtocolError("relay request: invalid app or stream name");
  r.app = std::string(app);
  r.name = std::string(name);
}

}  // namespace

bool is_link_media(LinkFrameType t) {
  return t == LinkFrameType::Audio || t == LinkFrameType::Video || t == LinkFrameType::Data;
}

bool is_known_link_type(uint8_t t) {
  switch (static_cast<LinkFrameType>(t)) {
    case LinkFrameType::Audio:
    case LinkFrameType::Video:
    case LinkFrameType::Data:
    case LinkFrameType::Publish:
    case LinkFrameType::Unpublish:
    case LinkFrameType::End:
    case LinkFrameType::Error:
    case LinkFrameType::HlsObject:
      return true;
  }
  return false;
}

const char* link_frame_type_name(LinkFrameType t) {
  switch (t) {
    case LinkFrameType::Audio: return "audio";
    case LinkFrameType::Video: return "video";
    case LinkFrameType::Data: return "data";
    case LinkFrameType::Publish: return "publish";
    case LinkFrameType::Unpublish: return "unpublish";
    case LinkFrameType::End: return "end";
    case LinkFrameType::Error: return "error";
    case LinkFrameType::HlsObject: return "hls-object";
  }
  return "?";
}

void encode_link_header(const LinkFrameHeader& h, uint8_t out[kLinkHeaderSize]) {
  out[0] = static_cast<uint8_t>(h.type);
  out[1] = h.flags;
  out[2] = 0;
  out[3] = 0;
  put_u32(out + 4, h.timestamp);
  put_u32(out + 8, h.length);
}

BufferRef link_header_buffer(const LinkFrameHeader& h) {
  BufferRef b = SharedBuffer::create(kLinkHeaderSize);
  encode_link_header(h, b->tail());
  b->commit(kLinkHeaderSize);
  return b;
}

BufferRef link_control_frame(LinkFrameType type, std::string_view text) {
  LinkFrameHeader h;
  h.type = type;
  h.length = static_cast<uint32_t>(text.size());
  BufferRef b = SharedBuffer::create(kLinkHeaderSize + text.size());
  encode_link_header(h, b->tail());
  b->commit(kLinkHeaderSize);
  b->append(text.data(), text.size());
  return b;
}

// ---------------------------------------------------------------------------------------------

LinkFrameReader::LinkFrameReader(Handler on_frame, LinkReaderLimits limits)
    : on_frame_(std::move(on_frame)), limits_(limits) {}

void LinkFrameReader::on_header() {
  const uint8_t type = hdr_[0];
  if (!is_known_link_type(type)) throw ProtocolError("relay frame: unknown type " + std::to_string(type));
  cur_.type = static_cast<LinkFrameType>(type);
  cur_.flags = hdr_[1];
  if (cur_.flags & ~link_flag::All) throw ProtocolError("relay frame: reserved flag bits set");
  if (hdr_[2] != 0 || hdr_[3] != 0) throw ProtocolError("relay frame: reserved bytes not zero");
  cur_.timestamp = get_u32(hdr_ + 4);
  cur_.length = get_u32(hdr_ + 8);
  const bool media = is_link_media(cur_.type) || cur_.type == LinkFrameType::HlsObject;
  if (!media && cur_.flags != 0) throw ProtocolError("relay frame: flags on a control frame");
  const uint32_t max = media ? limits_.max_body : limits_.max_control_body;
  if (cur_.length > max) {
    throw ProtocolError(std::string("relay frame: ") + link_frame_type_name(cur_.type) + " body of " +
                        std::to_string(cur_.length) + " bytes exceeds the limit " + std::to_string(max));
  }
  body_ = SharedBuffer::create(cur_.length);
  in_body_ = true;
}

void LinkFrameReader::deliver() {
  LinkFrame f;
  f.header = cur_;
  f.body = std::move(body_);
  body_.reset();
  in_body_ = false;
  hdr_have_ = 0;
  ++frames_;
  on_frame_(std::move(f));
}

size_t LinkFrameReader::feed(std::span<const uint8_t> bytes) {
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
  bytes_ += n;
  while (n > 0) {
    if (!in_body_) {
      const size_t take = std::min(n, kLinkHeaderSize - hdr_have_);
      std::memcpy(hdr_ + hdr_have_, p, take);
      hdr_have_ += take;
      p += take;
      n -= take;
      if (hdr_have_ < kLinkHeaderSize) break;
      on_header();
      if (cur_.length == 0) deliver();
      continue;
    }
    const size_t take = std::min(n, body_->room());
    body_->append(p, take);
    p += take;
    n -= take;
    if (body_->room() == 0) deliver();
  }
  return bytes.size();
}

// ---------------------------------------------------------------------------------------------

LinkRequest parse_link_request(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() > kLinkMaxRequestLine) throw ProtocolError("relay request: line too long");
  for (unsigned char c : line) {
    if (c < 0x20 || c >= 0x7f) throw ProtocolError("relay request: control or non-ASCII byte");
  }
  // Split on single spaces.
  std::string_view words[4];
  size_t count = 0;
  std::string_view rest = line;
  while (!rest.empty()) {
    if (count == 4) throw ProtocolError("relay request: too many words");
    const size_t sp = rest.find(' ');
    words[count++] = rest.substr(0, sp);
    if (words[count - 1].empty()) throw ProtocolError("relay request: empty word");
    if (sp == std::string_view::npos) break;
    rest.remove_prefix(sp + 1);
    if (rest.empty()) throw ProtocolError("relay request: trailing space");
  }
  if (count == 0) throw ProtocolError("relay request: empty line");
  LinkRequest r;
  const std::string_view verb = words[0];
  if (verb == "PLAY" && count == 2) {
    r.kind = LinkRequest::Kind::Play;
    split_key(words[1], r);
  } else if (verb == "STATS" && count == 1) {
    r.kind = LinkRequest::Kind::Stats;
  } else if (verb == "STATS" && count == 2 && words[1] == "ALL") {
    r.kind = LinkRequest::Kind::StatsAll;
  } else if (verb == "HLS" && count == 3) {
    r.kind = LinkRequest::Kind::Hls;
    split_key(words[1], r);
    if (!parse_hls_object(words[2])) throw ProtocolError("relay request: invalid HLS object name");
    r.object = std::string(words[2]);
  } else {
    throw ProtocolError("relay request: unknown request '" + std::string(line.substr(0, 64)) + "'");
  }
  return r;
}

std::string format_link_request(const LinkRequest& r) {
  switch (r.kind) {
    case LinkRequest::Kind::Play: return "PLAY " + r.key() + "\n";
    case LinkRequest::Kind::Stats: return "STATS\n";
    case LinkRequest::Kind::StatsAll: return "STATS ALL\n";
    case LinkRequest::Kind::Hls: return "HLS " + r.key() + " " + r.object + "\n";
  }
  return "\n";
}

// ---------------------------------------------------------------------------------------------

std::optional<HlsObjectName> parse_hls_object(std::string_view object) {
  if (object == kHlsPlaylistObject) return HlsObjectName{};
  constexpr std::string_view ext = ".ts";
  if (object.size() <= ext.size() || object.substr(object.size() - ext.size()) != ext) return std::nullopt;
  const std::string_view digits = object.substr(0, object.size() - ext.size());
  if (digits.size() > 20 || (digits.size() > 1 && digits[0] == '0')) return std::nullopt;
  uint64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;  // overflow
    v = v * 10 + d;
  }
  return HlsObjectName{false, v};
}

std::string format_hls_object(const HlsObjectName& o) {
  return o.playlist ? std::string(kHlsPlaylistObject) : std::to_string(o.sequence) + ".ts";
}

BufferRef link_hls_object_header(uint32_t max_age_s, uint32_t length) {
  LinkFrameHeader h;
  h.type = LinkFrameType::HlsObject;
  h.timestamp = max_age_s;
  h.length = length;
  return link_header_buffer(h);
}

}  // namespace rill::protocol
