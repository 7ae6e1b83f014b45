#include "rill/protocol/worker_link_frame.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "rill/core/byte_order.h"
#include "rill/protocol/error.h"
#include "rill/protocol/hls_delivery.h"

namespace rill::protocol {

namespace {

// One frame: header (and an HlsObject's answer head) followed by `body`, copied into one buffer.
BufferRef whole_frame(LinkFrameType type, std::span<const uint8_t> prefix, std::string_view body) {
  const size_t length = prefix.size() + body.size();
  BufferRef b = SharedBuffer::create(kLinkHeaderSize + length);
  uint8_t* p = b->tail();
  *p++ = static_cast<uint8_t>(type);
  *p++ = 0;
  p = store_be16(p, 0);
  p = store_be32(p, 0);
  store_be32(p, static_cast<uint32_t>(length));
  b->commit(kLinkHeaderSize);
  b->append(prefix);
  b->append(body.data(), body.size());
  return b;
}

std::string_view text_of(const BufferRef& b) { return b ? b->view() : std::string_view(); }

// An HlsObject's answer head on the wire (kLinkHlsPrefixSize bytes).
void store_hls_head(uint8_t* p, const HlsAnswerHead& h) {
  p = store_be16(p, h.status);
  *p++ = static_cast<uint8_t>(h.cache.kind);
  *p++ = h.retry_after_s;
  store_be32(p, h.cache.max_age_s);
}

HlsAnswerHead load_hls_head(const uint8_t* p) {
  HlsAnswerHead h;
  h.status = load_be16(p);
  h.cache.kind = static_cast<HlsCacheKind>(p[2]);
  h.retry_after_s = p[3];
  h.cache.max_age_s = load_be32(p + 4);
  return h;
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
    case LinkFrameType::Stats:
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
    case LinkFrameType::Stats: return "stats";
  }
  return "?";
}

LinkFrameType link_message_type(const LinkMessage& m) {
  struct Type {
    LinkFrameType operator()(const LinkMedia& x) const { return x.type; }
    LinkFrameType operator()(const LinkPublish&) const { return LinkFrameType::Publish; }
    LinkFrameType operator()(const LinkUnpublish&) const { return LinkFrameType::Unpublish; }
    LinkFrameType operator()(const LinkEnd&) const { return LinkFrameType::End; }
    LinkFrameType operator()(const LinkError&) const { return LinkFrameType::Error; }
    LinkFrameType operator()(const LinkHlsObject&) const { return LinkFrameType::HlsObject; }
    LinkFrameType operator()(const LinkStats&) const { return LinkFrameType::Stats; }
  };
  return std::visit(Type{}, m);
}

BufferRef link_media_header(LinkFrameType type, uint8_t flags, uint32_t timestamp, uint32_t length) {
  BufferRef b = SharedBuffer::create(kLinkHeaderSize);
  uint8_t* p = b->tail();
  *p++ = static_cast<uint8_t>(type);
  *p++ = flags;
  p = store_be16(p, 0);
  p = store_be32(p, timestamp);
  store_be32(p, length);
  b->commit(kLinkHeaderSize);
  return b;
}

BufferRef link_hls_object_header(const HlsAnswerHead& head, uint32_t length) {
  uint8_t prefix[kLinkHlsPrefixSize];
  store_hls_head(prefix, head);
  BufferRef b = whole_frame(LinkFrameType::HlsObject, prefix, {});
  store_be32(b->data() + 8, static_cast<uint32_t>(kLinkHlsPrefixSize + length));  // the object follows
  return b;
}

BufferRef encode_link_message(const LinkMessage& m) {
  const LinkFrameType type = link_message_type(m);
  if (const auto* media = std::get_if<LinkMedia>(&m)) {
    BufferRef b = SharedBuffer::create(kLinkHeaderSize + media->body.size());
    b->append(link_media_header(type, media->flags, media->timestamp, static_cast<uint32_t>(media->body.size())).span());
    b->append(media->body.span());
    return b;
  }
  if (const auto* hls = std::get_if<LinkHlsObject>(&m)) {
    uint8_t prefix[kLinkHlsPrefixSize];
    store_hls_head(prefix, hls->head);
    return whole_frame(type, prefix, text_of(hls->body));
  }
  if (const auto* e = std::get_if<LinkError>(&m)) return whole_frame(type, {}, e->reason);
  if (const auto* s = std::get_if<LinkStats>(&m)) return whole_frame(type, {}, s->json);
  return whole_frame(type, {}, {});
}

// ---------------------------------------------------------------------------------------------

LinkFrameReader::LinkFrameReader(Handler on_message, LinkReaderLimits limits)
    : on_message_(std::move(on_message)), limits_(limits) {}

void LinkFrameReader::on_header() {
  const uint8_t type = head_[0];
  if (!is_known_link_type(type)) throw ProtocolError("worker link frame: unknown type " + std::to_string(type));
  type_ = static_cast<LinkFrameType>(type);
  const uint8_t flags = head_[1];
  if (flags & ~link_flag::All) throw ProtocolError("worker link frame: reserved flag bits set");
  if (load_be16(head_ + 2) != 0) throw ProtocolError("worker link frame: reserved bytes not zero");
  const uint32_t length = load_be32(head_ + 8);
  const bool media = is_link_media(type_);
  if (!media && (flags != 0 || load_be32(head_ + 4) != 0)) {
    throw ProtocolError(std::string("worker link frame: flags or timestamp on a ") + link_frame_type_name(type_) + " frame");
  }
  size_t prefix = 0;
  uint32_t max = 0;
  switch (type_) {
    case LinkFrameType::Publish:
    case LinkFrameType::Unpublish:
    case LinkFrameType::End: max = 0; break;
    case LinkFrameType::Error: max = limits_.max_error_body; break;
    case LinkFrameType::Stats: max = limits_.max_stats_body; break;
    case LinkFrameType::HlsObject:
      prefix = kLinkHlsPrefixSize;
      if (length < prefix) throw ProtocolError("worker link frame: hls-object shorter than its answer head");
      max = limits_.max_body;
      break;
    default: max = limits_.max_body; break;  // media
  }
  if (length - prefix > max) {
    throw ProtocolError(std::string("worker link frame: ") + link_frame_type_name(type_) + " body of " +
                        std::to_string(length - prefix) + " bytes exceeds the limit " + std::to_string(max));
  }
  want_ = kLinkHeaderSize + prefix;
  body_ = SharedBuffer::create(length - prefix);
}

// An HlsObject's answer head, once read: a status, a known cache kind, and no field that does
// not apply (a max-age without caching, caching or Retry-After on a 200's opposite, a reason
// longer than an Error's).
void LinkFrameReader::on_hls_head() {
  const HlsAnswerHead h = load_hls_head(head_ + kLinkHeaderSize);
  if (h.status < 200 || h.status > 599) {
    throw ProtocolError("worker link frame: hls-object status " + std::to_string(h.status));
  }
  if (h.cache.kind > HlsCacheKind::Immutable)
    throw ProtocolError("worker link frame: hls-object cache kind unknown");
  if (h.cache.kind == HlsCacheKind::NoCache && h.cache.max_age_s != 0) {
    throw ProtocolError("worker link frame: hls-object max-age without caching");
  }
  if (h.status == 200 ? h.retry_after_s != 0 : h.cache.kind != HlsCacheKind::NoCache) {
    throw ProtocolError("worker link frame: hls-object Retry-After on a 200, or caching on an error");
  }
  if (h.status != 200 && body_->room() > limits_.max_error_body) {
    throw ProtocolError("worker link frame: hls-object reason of " + std::to_string(body_->room()) +
                        " bytes exceeds the limit " + std::to_string(limits_.max_error_body));
  }
}

void LinkFrameReader::deliver() {
  LinkMessage m;
  switch (type_) {
    case LinkFrameType::Publish: m = LinkPublish{}; break;
    case LinkFrameType::Unpublish: m = LinkUnpublish{}; break;
    case LinkFrameType::End: m = LinkEnd{}; break;
    case LinkFrameType::Error: m = LinkError{std::string(text_of(body_))}; break;
    case LinkFrameType::Stats: m = LinkStats{std::string(text_of(body_))}; break;
    case LinkFrameType::HlsObject: m = LinkHlsObject{load_hls_head(head_ + kLinkHeaderSize), std::move(body_)}; break;
    default: m = LinkMedia{type_, head_[1], load_be32(head_ + 4), std::move(body_)}; break;
  }
  body_.reset();
  in_body_ = false;
  have_ = 0;
  want_ = kLinkHeaderSize;
  ++frames_;
  on_message_(std::move(m));
}

size_t LinkFrameReader::feed(std::span<const uint8_t> bytes) {
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
  bytes_ += n;
  while (n > 0) {
    if (!in_body_) {
      const size_t take = std::min(n, want_ - have_);
      std::memcpy(head_ + have_, p, take);
      have_ += take;
      p += take;
      n -= take;
      if (have_ < want_) break;
      if (have_ == kLinkHeaderSize) {
        on_header();  // may ask for a prefix (want_ grows)
        if (have_ < want_) continue;
      } else {
        on_hls_head();  // the prefix is read
      }
      in_body_ = true;
      if (body_->room() == 0) deliver();
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

namespace {

constexpr size_t kMaxWords = 6;

// Splits a request line into at most kMaxWords words separated by single spaces.
size_t split_words(std::string_view line, std::string_view (&words)[kMaxWords]) {
  size_t count = 0;
  std::string_view rest = line;
  while (!rest.empty()) {
    if (count == kMaxWords) throw ProtocolError("worker link request: too many words");
    const size_t sp = rest.find(' ');
    words[count++] = rest.substr(0, sp);
    if (words[count - 1].empty()) throw ProtocolError("worker link request: empty word");
    if (sp == std::string_view::npos) break;
    rest.remove_prefix(sp + 1);
    if (rest.empty()) throw ProtocolError("worker link request: trailing space");
  }
  if (count == 0) throw ProtocolError("worker link request: empty line");
  return count;
}

// A relay id: 1-64 bytes of [A-Za-z0-9_-] (the API makes them; nothing else is accepted).
bool relay_id_ok(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  }
  return true;
}

// "app/name" -> app, name (split at the first '/'; the names are checked by workers/).
template <typename Request>
Request with_key(std::string_view key) {
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos) throw ProtocolError("worker link request: expected APP/NAME, got '" + std::string(key) + "'");
  Request r;
  r.app = std::string(key.substr(0, slash));
  r.name = std::string(key.substr(slash + 1));
  return r;
}

// RELAY ADD <id> <push|pull> <app>/<name> <url> | RELAY DEL <id>
LinkRequest parse_relay_request(const std::string_view (&w)[kMaxWords], size_t count) {
  if (count < 3 || !relay_id_ok(w[2])) throw ProtocolError("worker link request: RELAY expects ADD|DEL and a relay id");
  if (w[1] == "DEL" && count == 3) return LinkRelayDelRequest{std::string(w[2])};
  if (w[1] != "ADD" || count != 6) {
    throw ProtocolError("worker link request: expected RELAY ADD ID KIND APP/NAME URL or RELAY DEL ID");
  }
  if (w[3] != "push" && w[3] != "pull") throw ProtocolError("worker link request: RELAY ADD kind must be push or pull");
  auto r = with_key<LinkRelayAddRequest>(w[4]);
  r.id = std::string(w[2]);
  r.kind = std::string(w[3]);
  r.url = std::string(w[5]);
  return r;
}

}  // namespace

LinkRequest parse_link_request(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() > kLinkMaxRequestLine) throw ProtocolError("worker link request: line too long");
  for (unsigned char c : line) {
    if (c < 0x20 || c >= 0x7f) throw ProtocolError("worker link request: control or non-ASCII byte");
  }
  std::string_view w[kMaxWords];
  const size_t count = split_words(line, w);
  if (w[0] == "RELAY") return parse_relay_request(w, count);
  if (w[0] == "PLAY" && count == 2) return with_key<LinkPlayRequest>(w[1]);
  if (w[0] == "STATS" && count == 1) return LinkStatsRequest{false};
  if (w[0] == "STATS" && count == 2 && w[1] == "ALL") return LinkStatsRequest{true};
  if (w[0] == "KICK" && count == 2) {
    const auto id = parse_decimal_u64(w[1]);
    if (!id) throw ProtocolError("worker link request: KICK expects a decimal client id");
    return LinkKickRequest{*id};
  }
  if (w[0] == "DROP" && count == 2) return with_key<LinkDropRequest>(w[1]);
  if (w[0] == "RECORD" && count == 3) {
    if (w[2] != "start" && w[2] != "stop")
      throw ProtocolError("worker link request: RECORD expects start or stop");
    auto r = with_key<LinkRecordRequest>(w[1]);
    r.start = w[2] == "start";
    return r;
  }
  if (w[0] == "HLS" && count == 3) {
    auto r = with_key<LinkHlsRequest>(w[1]);
    const auto object = parse_hls_object(w[2]);
    if (!object) throw ProtocolError("worker link request: invalid HLS object name");
    r.object = *object;
    return r;
  }
  throw ProtocolError("worker link request: unknown request '" + std::string(line.substr(0, 64)) + "'");
}

std::string format_link_request(const LinkRequest& r) {
  if (const auto* p = std::get_if<LinkPlayRequest>(&r)) return "PLAY " + p->app + "/" + p->name + "\n";
  if (const auto* h = std::get_if<LinkHlsRequest>(&r)) {
    return "HLS " + h->app + "/" + h->name + " " + format_hls_object(h->object) + "\n";
  }
  if (const auto* k = std::get_if<LinkKickRequest>(&r)) return "KICK " + std::to_string(k->id) + "\n";
  if (const auto* d = std::get_if<LinkDropRequest>(&r)) return "DROP " + d->app + "/" + d->name + "\n";
  if (const auto* a = std::get_if<LinkRelayAddRequest>(&r)) {
    return "RELAY ADD " + a->id + " " + a->kind + " " + a->app + "/" + a->name + " " + a->url + "\n";
  }
  if (const auto* x = std::get_if<LinkRelayDelRequest>(&r)) return "RELAY DEL " + x->id + "\n";
  if (const auto* c = std::get_if<LinkRecordRequest>(&r)) {
    return "RECORD " + c->app + "/" + c->name + (c->start ? " start\n" : " stop\n");
  }
  return std::get<LinkStatsRequest>(r).all ? "STATS ALL\n" : "STATS\n";
}

// ---------------------------------------------------------------------------------------------

std::optional<uint64_t> parse_decimal_u64(std::string_view digits) {
  if (digits.empty() || digits.size() > 20 || (digits.size() > 1 && digits[0] == '0')) return std::nullopt;
  uint64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;  // overflow
    v = v * 10 + d;
  }
  return v;
}

std::optional<HlsObjectName> parse_hls_object(std::string_view object) {
  if (object == kHlsPlaylistObject) return HlsObjectName{};
  if (object == kHlsVariantObject) return HlsObjectName{false, 0, HlsSegmentForm::Ts, {}, true};
  if (object.starts_with(std::string(kHlsPlaylistObject) + "?")) {
    const std::string_view query = object.substr(kHlsPlaylistObject.size() + 1);
    HlsObjectName o;
    try {
      o.directives = format_hls_delivery_directives(parse_hls_delivery_directives(query));
    } catch (const ProtocolError&) {
      return std::nullopt;
    }
    if (o.directives.empty() || o.directives != query) return std::nullopt;  // canonical only
    return o;
  }
  const auto split = split_hls_segment_file(object);
  if (!split) return std::nullopt;
  const auto v = parse_decimal_u64(split->second);
  if (!v) return std::nullopt;
  return HlsObjectName{false, *v, split->first};
}

std::string format_hls_object(const HlsObjectName& o) {
  if (o.variant) return std::string(kHlsVariantObject);
  if (o.playlist) return o.directives.empty() ? std::string(kHlsPlaylistObject) : std::string(kHlsPlaylistObject) + "?" + o.directives;
  return hls_segment_file(o.form, o.sequence);
}

}  // namespace rill::protocol
