#pragma once
// FLV file framing (FLV spec 10.1 Annex E.2-E.4.1): the 9-byte header, then tags, each followed by
// a UI32 PreviousTagSize. Used by HTTP-FLV output (serialize once per message into a shared
// buffer, optionally with HTTP chunked framing around it) and by readers of FLV streams.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rill/core/buffer.h"
#include "rill/protocol/error.h"

namespace rill::protocol {

inline constexpr size_t kFlvHeaderSize = 9;          // E.2 DataOffset of a version 1 file
inline constexpr size_t kFlvFileHeaderSize = 13;     // header + PreviousTagSize0
inline constexpr size_t kFlvTagHeaderSize = 11;      // E.4.1
inline constexpr size_t kFlvPreviousTagSizeSize = 4;
inline constexpr size_t kFlvMaxBodySize = 0xFFFFFF;  // DataSize is UI24

// "FLV", version 1, TypeFlags (audio 0x04, video 0x01), DataOffset 9, PreviousTagSize0 = 0.
std::array<uint8_t, kFlvFileHeaderSize> flv_file_header(bool has_audio, bool has_video);

// Bytes serialize_flv_tag_into writes: 11 + body_size + 4.
constexpr size_t flv_tag_size(size_t body_size) {
  return kFlvTagHeaderSize + body_size + kFlvPreviousTagSizeSize;
}

// Writes one tag (header, body, PreviousTagSize) to out, which must hold flv_tag_size(body.size())
// bytes; returns that size. The timestamp's low 24 bits go in Timestamp, the high 8 bits in
// TimestampExtended (E.4.1). Throws ProtocolError when the body exceeds kFlvMaxBodySize.
size_t serialize_flv_tag_into(uint8_t* out, uint8_t tag_type, uint32_t timestamp_ms, std::span<const uint8_t> body);

// One tag in a new shared buffer.
BufferRef serialize_flv_tag(uint8_t tag_type, uint32_t timestamp_ms, std::span<const uint8_t> body);

// prefix + tag + suffix in one shared buffer, e.g. an HTTP/1.1 chunk: prefix "%zx\r\n" of
// flv_tag_size(body.size()), suffix "\r\n".
BufferRef serialize_flv_tag_framed(uint8_t tag_type, uint32_t timestamp_ms, std::span<const uint8_t> body,
                                   std::string_view prefix, std::string_view suffix);

struct FlvTag {
  uint8_t type = 0;           // 8 audio, 9 video, 18 script
  bool filtered = false;      // Filter bit (encrypted per FLV 10.1 E.4.1); body passed as is
  uint32_t timestamp_ms = 0;  // Timestamp | TimestampExtended << 24
  std::vector<uint8_t> body;
};

struct FlvReaderOptions {
  size_t max_tag_size = 16u << 20;  // DataSize limit (the field's own maximum is 16 MiB - 1)
  size_t max_data_offset = 1024;    // header DataOffset accepted up to this (9 for version 1)
  bool check_previous_tag_size = true;  // PreviousTagSize must equal 11 + the previous DataSize
};

// Incremental FLV stream parser: feed() bytes as they arrive, pull tags with next() until it
// returns nullopt (needs more bytes). Garbage (bad signature, version, data offset, tag type,
// tag size, PreviousTagSize) throws ProtocolError; after a throw the reader must be discarded.
class FlvFileReader {
 public:
  explicit FlvFileReader(FlvReaderOptions options = {});

  void feed(std::span<const uint8_t> bytes);
  std::optional<FlvTag> next();

  bool header_done() const { return state_ != State::Header; }
  bool has_audio() const { return has_audio_; }  // header TypeFlagsAudio
  bool has_video() const { return has_video_; }  // header TypeFlagsVideo
  size_t buffered() const { return buf_.size() - pos_; }  // bytes fed but not consumed
  uint64_t consumed() const { return consumed_; }         // stream offset of the next unread byte

 private:
  enum class State { Header, HeaderPad, PreviousTagSize, Tag };
  void consume(size_t n);
  [[noreturn]] void fail(const std::string& what) const;

  FlvReaderOptions opt_;
  State state_ = State::Header;
  std::vector<uint8_t> buf_;
  size_t pos_ = 0;
  uint64_t consumed_ = 0;
  size_t pad_left_ = 0;
  uint32_t expected_prev_size_ = 0;
  bool has_audio_ = false;
  bool has_video_ = false;
};

}  // namespace rill::protocol
