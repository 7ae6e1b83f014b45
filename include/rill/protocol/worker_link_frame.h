#pragma once
// Relay framing: how one worker streams an already-parsed live stream to another worker over a
// Unix socket (see docs/workers.md). Pure bytes in / bytes out: no socket, no clock.
//
// A connection starts with one request line from the pulling worker (ASCII, '\n'-terminated,
// at most kLinkMaxRequestLine bytes):
//
//   PLAY <app>/<name>           stream this live stream to me (answered with frames)
//   STATS                       this worker's statistics as JSON, then EOF
//   STATS ALL                   every worker's statistics merged (gathered by the answering one)
//   HLS <app>/<name> <object>   HLS fetch from the owner: <object> is index.m3u8 (the playlist)
//                               or <seq>.ts (a segment); answered with one HlsObject frame or one
//                               Error frame (not found), then EOF
//
// PLAY is answered with frames, each a 12-byte header and a body:
//
//   0      type      u8   8 audio, 9 video, 18 data (= RTMP message / FLV tag types),
//                         or a control type below
//   1      flags     u8   bit 0 keyframe, bit 1 sequence header, bit 2 metadata; others zero
//   2..3   reserved  u16  zero
//   4..7   timestamp u32  big-endian, ms on the owner's output timeline
//   8..11  length    u32  big-endian, body bytes that follow
//
// Media bodies are FLV tag bodies (the RTMP message payload) exactly as the owner's hub holds
// them. Control frames: Publish (the stream is live; the replay of metadata, sequence headers and
// the GOP cache follows), Unpublish (the publisher left), End (the stream is gone), Error (body:
// a UTF-8 reason; the connection then closes). HlsObject answers an HLS request: the body is the
// playlist or segment bytes, the timestamp field carries the Cache-Control max-age in seconds
// (0 for a playlist: no-cache), flags are zero.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "rill/core/buffer.h"

namespace rill::protocol {

inline constexpr size_t kLinkHeaderSize = 12;
inline constexpr size_t kLinkMaxRequestLine = 512;

enum class LinkFrameType : uint8_t {
  Audio = 8,
  Video = 9,
  Data = 18,
  Publish = 0x40,
  Unpublish = 0x41,
  End = 0x42,
  Error = 0x43,
  HlsObject = 0x50,  // answer to HLS (body: the object; timestamp: max-age seconds)
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

struct LinkFrameHeader {
  LinkFrameType type = LinkFrameType::Data;
  uint8_t flags = 0;
  uint32_t timestamp = 0;
  uint32_t length = 0;
};

// Writes the 12 header bytes.
void encode_link_header(const LinkFrameHeader& h, uint8_t out[kLinkHeaderSize]);
BufferRef link_header_buffer(const LinkFrameHeader& h);
// A whole control frame (header + optional text body) in one buffer.
BufferRef link_control_frame(LinkFrameType type, std::string_view text = {});

struct LinkFrame {
  LinkFrameHeader header;
  BufferRef body;  // allocated once with the body's exact size
};

struct LinkReaderLimits {
  uint32_t max_body = 16 * 1024 * 1024;    // media bodies (the RTMP max message size)
  uint32_t max_control_body = 4096;        // control frames carry at most a short reason
};

// Incremental frame reader. feed() consumes every byte given and calls the handler once per
// completed frame, synchronously. Malformed input (unknown type, reserved bits set, a body over
// the limits) throws ProtocolError; the reader is then unusable and the link must close.
class LinkFrameReader {
 public:
  using Handler = std::function<void(LinkFrame&&)>;
  explicit LinkFrameReader(Handler on_frame, LinkReaderLimits limits = {});

  size_t feed(std::span<const uint8_t> bytes);
  uint64_t frames() const { return frames_; }
  uint64_t bytes() const { return bytes_; }
  // True between frames (nothing partial buffered).
  bool at_boundary() const { return hdr_have_ == 0 && !in_body_; }

 private:
  void on_header();
  void deliver();

  Handler on_frame_;
  LinkReaderLimits limits_;
  uint8_t hdr_[kLinkHeaderSize] = {};
  size_t hdr_have_ = 0;
  bool in_body_ = false;
  LinkFrameHeader cur_;
  BufferRef body_;
  uint64_t frames_ = 0;
  uint64_t bytes_ = 0;
};

// ---- request line ----------------------------------------------------------------------------

struct LinkRequest {
  enum class Kind { Play, Stats, StatsAll, Hls };
  Kind kind = Kind::Stats;
  std::string app;
  std::string name;
  std::string object;  // Hls: the playlist or segment name
  std::string key() const { return app + "/" + name; }
};

// Parses one request line (without the '\n'; a trailing '\r' is tolerated). App and stream names
// are restricted to [A-Za-z0-9_.~-] (1..kLinkMaxName bytes, not "." or ".."). Throws
// ProtocolError naming what is wrong.
inline constexpr size_t kLinkMaxName = 256;
LinkRequest parse_link_request(std::string_view line);
std::string format_link_request(const LinkRequest& r);  // with the trailing '\n'

// ---- HLS objects ------------------------------------------------------------------------------

// The <object> of an HLS request: "index.m3u8" (the playlist) or "<seq>.ts" (decimal, no leading
// zero, fits in 64 bits). parse_link_request accepts only these.
struct HlsObjectName {
  bool playlist = true;
  uint64_t sequence = 0;  // segment
  bool operator==(const HlsObjectName&) const = default;
};
inline constexpr std::string_view kHlsPlaylistObject = "index.m3u8";
std::optional<HlsObjectName> parse_hls_object(std::string_view object);
std::string format_hls_object(const HlsObjectName& o);
// The header of an HlsObject answer (the body, `length` bytes, follows).
BufferRef link_hls_object_header(uint32_t max_age_s, uint32_t length);

}  // namespace rill::protocol
