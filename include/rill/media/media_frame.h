#pragma once
// MediaFrame: one audio, video or script-data message of a stream, as the hub passes it on.
// The payload is the FLV tag body (identical to the RTMP message payload), shared, never copied.
// Each output format serializes a frame once and caches the bytes here, so 1000 subscribers of
// one format share one buffer (zero-copy fan-out).
#include <cstdint>
#include <memory>

#include "rill/core/buffer.h"

namespace rill::media {

enum class MediaType : uint8_t { Audio = 8, Video = 9, Data = 18 };

struct MediaFrame {
  MediaType type = MediaType::Data;
  uint32_t timestamp = 0;        // ms on the stream's output timeline (32-bit wrap, never backwards)
  int32_t composition_time = 0;  // video only: PTS - DTS in ms
  bool keyframe = false;         // a video keyframe (also set for a sequence header)
  bool sequence_header = false;  // AVC/HEVC/AV1 config record or AAC AudioSpecificConfig
  bool metadata = false;         // onMetaData (already stripped of @setDataFrame)
  BufferRef payload;             // FLV tag body

  // Serialized RTMP chunks (fmt 0 first chunk, message stream id 1, csid 4 audio / 6 video / 5 data)
  // for the given outgoing chunk size; cached for the most recent chunk size.
  const BufferRef& rtmp_chunks(uint32_t chunk_size) const;
  // Serialized FLV tag + PreviousTagSize (HTTP-FLV bodies of HTTP/1.0 players); cached.
  const BufferRef& flv_tag() const;
  // The same tag as one HTTP/1.1 chunk (RFC 9112 §7.1: "hex-size CRLF tag CRLF"), so chunked
  // HTTP-FLV players share one framed buffer per frame as RTMP players share its chunks; cached.
  const BufferRef& flv_chunk() const;

 private:
  mutable BufferRef rtmp_cache_;
  mutable uint32_t rtmp_cache_chunk_size_ = 0;
  mutable BufferRef flv_cache_;
  mutable BufferRef flv_chunk_cache_;
};

using FramePtr = std::shared_ptr<const MediaFrame>;

// RTMP chunk stream ids the server uses for outgoing media (per message type).
constexpr uint32_t kRtmpCsidAudio = 4;
constexpr uint32_t kRtmpCsidData = 5;
constexpr uint32_t kRtmpCsidVideo = 6;
constexpr uint32_t kRtmpPlayStreamId = 1;

}  // namespace rill::media
