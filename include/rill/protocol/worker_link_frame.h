#pragma once
// The worker link: how one worker asks another for a live stream, its statistics or an HLS object
// over a Unix socket (docs/workers.md). Pure bytes in / bytes out: no socket, no clock.
//
// A connection starts with one request line from the asking worker (ASCII, '\n'-terminated, at
// most kLinkMaxRequestLine bytes), parsed into a typed request:
//
//   PLAY <app>/<name>           LinkPlayRequest   stream this live stream to me (frames)
//   STATS                       LinkStatsRequest  this worker's statistics: one Stats frame
//   STATS ALL                   LinkStatsRequest  every worker's, gathered by the answering one
//   HLS <app>/<name> <object>   LinkHlsRequest    <object>: index.m3u8[?directives], <seq>.ts,
//                                                 <seq>.m4s, init-<id>.mp4 or part-<n>.m4s; one
//                                                 HlsObject frame: the HLS responder's answer
//                                                 (media/hls_responder.h) with its status (200,
//                                                 400, 404, 503), cache policy and Retry-After
//                                                 as fields; an Error frame only for a request
//                                                 that names no valid stream
//   KICK <id>                   LinkKickRequest   close the client with this session id (decimal,
//                                                 no leading zero, 64 bits); a Stats frame
//                                                 {"closed": 0|1}
//   DROP <app>/<name>           LinkDropRequest   close the stream's publisher; {"closed": 0|1}
//   RECORD <app>/<name> <start|stop>
//                               LinkRecordRequest start or stop the stream's recording (the
//                                                 owner's recorder); {"found": 0|1, "state": ...}
//   RELAY ADD <id> <push|pull> <app>/<name> <url>
//                               LinkRelayAddRequest  create a run-time relay on this worker;
//                                                 {"created": 0|1, "error": "..."}
//   RELAY DEL <id>              LinkRelayDelRequest  end it; {"closed": 0|1}
//
// This layer only bounds the line and splits its words: app and stream names are checked by the
// one name rule (media::StreamKey) in workers/, which refuses a bad one with an Error frame.
//
// Answers are frames, each a 12-byte header and a body:
//
//   0      type      u8   8 audio, 9 video, 18 data (= RTMP message / FLV tag types),
//                         or another LinkFrameType below
//   1      flags     u8   media only: bit 0 keyframe, bit 1 sequence header, bit 2 metadata
//   2..3   reserved  u16  zero
//   4..7   timestamp u32  big-endian; media only: ms on the owner's output timeline (else zero)
//   8..11  length    u32  big-endian, body bytes that follow
//
// and decoded into a typed LinkMessage:
//
//   Audio/Video/Data  LinkMedia       body: the FLV tag body, exactly as the owner's hub holds it
//   Publish           LinkPublish     empty: the stream is live; metadata, sequence headers and
//                                     the GOP cache follow, then live frames
//   Unpublish / End   LinkUnpublish / LinkEnd   empty: the publisher left / the stream is gone
//   Error             LinkError       body: a UTF-8 reason (at most 4 KiB); the connection closes
//   HlsObject         LinkHlsObject   body: the answer's head (kLinkHlsPrefixSize bytes: status u16,
//                                     cache kind u8 — 0 no-cache, 1 max-age, 2 max-age + immutable —,
//                                     Retry-After u8 seconds, max-age u32; big-endian), then the
//                                     playlist or segment bytes (status 200) or the reason (else,
//                                     at most the Error limit). A field that does not apply is 0.
//   Stats             LinkStats       body: the statistics as JSON
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "rill/core/buffer.h"
#include "rill/protocol/hls_delivery.h"
#include "rill/protocol/hls_playlist.h"

namespace rill::protocol {

inline constexpr size_t kLinkHeaderSize = 12;
inline constexpr size_t kLinkHlsPrefixSize = 8;  // an HlsObject body starts with its answer head
inline constexpr size_t kLinkMaxRequestLine = 512;

enum class LinkFrameType : uint8_t {
  Audio = 8,
  Video = 9,
  Data = 18,
  Publish = 0x40,
  Unpublish = 0x41,
  End = 0x42,
  Error = 0x43,
  HlsObject = 0x50,
  Stats = 0x51,
};

namespace link_flag {
inline constexpr uint8_t Keyframe = 0x01;
inline constexpr uint8_t SequenceHeader = 0x02;
inline constexpr uint8_t Metadata = 0x04;
inline constexpr uint8_t All = 0x07;
}  // namespace link_flag

bool is_link_media(LinkFrameType t);
bool is_known_link_type(uint8_t t);
const char* link_frame_type_name(LinkFrameType t);

// ---- answers ---------------------------------------------------------------------------------

struct LinkMedia {
  LinkFrameType type = LinkFrameType::Data;  // Audio, Video or Data
  uint8_t flags = 0;
  uint32_t timestamp = 0;
  BufferRef body;  // allocated once with the body's exact size
};
struct LinkPublish {};
struct LinkUnpublish {};
struct LinkEnd {};
struct LinkError {
  std::string reason;
};
struct LinkHlsObject {
  HlsAnswerHead head;  // status, cache policy, Retry-After: as the owner's responder decided
  BufferRef body;      // status 200: the playlist or segment bytes; else the reason (UTF-8)
};
struct LinkStats {
  std::string json;
};
using LinkMessage = std::variant<LinkMedia, LinkPublish, LinkUnpublish, LinkEnd, LinkError, LinkHlsObject, LinkStats>;

LinkFrameType link_message_type(const LinkMessage& m);

// The header of a media frame; the body (the hub's shared payload) follows as its own buffer.
BufferRef link_media_header(LinkFrameType type, uint8_t flags, uint32_t timestamp, uint32_t length);
// Header and answer head of an HlsObject frame (20 bytes); `length` object bytes follow.
BufferRef link_hls_object_header(const HlsAnswerHead& head, uint32_t length);
// A whole frame in one buffer (the body copied): control frames, errors, statistics.
BufferRef encode_link_message(const LinkMessage& m);

struct LinkReaderLimits {
  uint32_t max_body = 16 * 1024 * 1024;       // media bodies and HLS objects
  uint32_t max_stats_body = 4 * 1024 * 1024;  // the JSON of a Stats frame
  uint32_t max_error_body = 4096;             // an Error's reason
};

// Incremental frame reader. feed() consumes every byte given and calls the handler once per
// completed frame, synchronously. Malformed input (unknown type, reserved bits or fields set, a
// body over the limits or of the wrong size for its type) throws ProtocolError; the reader is
// then unusable and the link must close.
class LinkFrameReader {
 public:
  using Handler = std::function<void(LinkMessage&&)>;
  explicit LinkFrameReader(Handler on_message, LinkReaderLimits limits = {});

  size_t feed(std::span<const uint8_t> bytes);
  uint64_t frames() const { return frames_; }
  uint64_t bytes() const { return bytes_; }
  // True between frames (nothing partial buffered).
  bool at_boundary() const { return have_ == 0 && !in_body_; }

 private:
  void on_header();
  void on_hls_head();
  void deliver();

  Handler on_message_;
  LinkReaderLimits limits_;
  uint8_t head_[kLinkHeaderSize + kLinkHlsPrefixSize] = {};
  size_t want_ = kLinkHeaderSize;  // header bytes to collect (the prefix, once the type is known)
  size_t have_ = 0;
  bool in_body_ = false;
  LinkFrameType type_ = LinkFrameType::Data;
  BufferRef body_;
  uint64_t frames_ = 0;
  uint64_t bytes_ = 0;
};

// ---- requests --------------------------------------------------------------------------------

// The <object> of an HLS request: "index.m3u8" (the playlist, with LL-HLS directives after a '?'
// in canonical form) or a file of the stream (hls_segment_file: "<seq>.ts", "<seq>.m4s",
// "init-<id>.mp4", "part-<n>.m4s"; decimal, no leading zero, fits in 64 bits).
struct HlsObjectName {
  bool playlist = true;
  uint64_t sequence = 0;  // segment (or init section) number
  HlsSegmentForm form = HlsSegmentForm::Ts;  // "<seq>.ts", "<seq>.m4s" or "init-<id>.mp4"
  // Playlist: LL-HLS delivery directives in canonical form ("index.m3u8?_HLS_msn=5&_HLS_part=2"),
  // "" for none (hls_delivery.h). The owner may hold such a request until it can answer it.
  std::string directives = {};
  // The stream's entry in its group's multivariant playlist (media::HlsStreamState::variant_entry,
  // docs/abr.md): asked by the worker that answers the group's NAME.m3u8. Not an HTTP object.
  bool variant = false;
  bool operator==(const HlsObjectName&) const = default;
};
inline constexpr std::string_view kHlsPlaylistObject = "index.m3u8";
inline constexpr std::string_view kHlsVariantObject = "variant";
std::optional<HlsObjectName> parse_hls_object(std::string_view object);
// Decimal digits, no sign, no leading zero, fits in 64 bits; nullopt otherwise.
std::optional<uint64_t> parse_decimal_u64(std::string_view digits);
std::string format_hls_object(const HlsObjectName& o);

struct LinkPlayRequest {
  std::string app;  // not validated here: workers/ applies media::StreamKey's rule
  std::string name;
  bool operator==(const LinkPlayRequest&) const = default;
};
struct LinkStatsRequest {
  bool all = false;  // STATS ALL: every worker's
  bool operator==(const LinkStatsRequest&) const = default;
};
struct LinkHlsRequest {
  std::string app;
  std::string name;
  HlsObjectName object;
  bool operator==(const LinkHlsRequest&) const = default;
};
struct LinkKickRequest {
  uint64_t id = 0;
  bool operator==(const LinkKickRequest&) const = default;
};
struct LinkDropRequest {
  std::string app;
  std::string name;
  bool operator==(const LinkDropRequest&) const = default;
};
struct LinkRecordRequest {
  std::string app;
  std::string name;
  bool start = false;  // start; false: stop
  bool operator==(const LinkRecordRequest&) const = default;
};
// A relay created or removed at run time (POST/DELETE /api/v1/relays), told to every worker.
struct LinkRelayAddRequest {
  std::string id;    // [A-Za-z0-9_-]{1,64}
  std::string kind;  // "push" | "pull"
  std::string app;
  std::string name;
  std::string url;   // one word (checked by the cluster)
  bool operator==(const LinkRelayAddRequest&) const = default;
};
struct LinkRelayDelRequest {
  std::string id;
  bool operator==(const LinkRelayDelRequest&) const = default;
};
using LinkRequest =
    std::variant<LinkPlayRequest, LinkStatsRequest, LinkHlsRequest, LinkKickRequest, LinkDropRequest,
                 LinkRelayAddRequest, LinkRelayDelRequest, LinkRecordRequest>;

// Parses one request line (without the '\n'; a trailing '\r' is tolerated): at most
// kLinkMaxRequestLine bytes of printable ASCII, words split by single spaces, a known verb with
// its words, <app>/<name> split at the first '/'. Throws ProtocolError naming what is wrong.
LinkRequest parse_link_request(std::string_view line);
std::string format_link_request(const LinkRequest& r);  // with the trailing '\n'

}  // namespace rill::protocol
