#pragma once
// MediaFrame: one audio, video or script-data message of a stream, as the hub passes it on.
// The payload is the FLV tag body (identical to the RTMP message payload), shared, never copied.
// Each output format serializes a frame once and caches the bytes here, so 1000 subscribers of
// one format share one buffer (zero-copy fan-out).
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "rill/core/buffer.h"

namespace rill::protocol {
struct AudioTagInfo;
struct VideoTagInfo;
}  // namespace rill::protocol

namespace rill::media {

enum class MediaType : uint8_t { Audio = 8, Video = 9, Data = 18 };

// The codec of an audio or video frame as its tag header names it. None: no one codec's data
// (script data, a video command frame, an E-RTMP multitrack video tag); Other: a codec no output
// here reads (VP6, FLAC, an E-RTMP multitrack audio tag, ...).
enum class FrameCodec : uint8_t { None, H264, HEVC, AV1, VP9, AAC, MP3, Opus, Other };

// How a frame stands to the tracks of an E-RTMP v2 multitrack publish (track_selection.h):
// Plain: a single-track tag as sent (track 0), or script data; Multitrack: a multitrack tag as
// sent (`track`: its first track's id); Reframed: one track (`track`) of a multitrack tag,
// re-framed by the stream as a single-track tag.
enum class FrameView : uint8_t { Plain, Multitrack, Reframed };

struct MediaFrame {
  MediaType type = MediaType::Data;
  // What the tag header says (FLV E.4.2 / E.4.3, Enhanced RTMP), read once by Stream::publish
  // (set_tag_facts) so that no output parses the header again. The fields are ordered to leave
  // no padding: a frame is allocated per message.
  FrameCodec codec = FrameCodec::None;
  bool keyframe = false;         // a video keyframe (also set for a sequence header)
  bool sequence_header = false;  // AVC/HEVC/AV1/VP9 config record, AAC AudioSpecificConfig, OpusHead
  bool coded = false;            // carries coded media (not a header, end of sequence or command)
  bool metadata = false;         // onMetaData (already stripped of @setDataFrame)
  FrameView view = FrameView::Plain;
  uint8_t track = 0;             // see FrameView
  uint32_t timestamp = 0;        // ms on the stream's output timeline (32-bit wrap, never backwards)
  int32_t composition_time = 0;  // video only: PTS - DTS in ms
  BufferRef payload;             // FLV tag body
  uint32_t data_offset = 0;      // where the codec data (NAL units, AAC AU, record) starts in payload

  // The codec data: the payload after its tag header.
  std::span<const uint8_t> data() const {
    const std::span<const uint8_t> body = payload.span();
    return body.subspan(data_offset < body.size() ? data_offset : body.size());
  }

  // Serialized RTMP chunks (fmt 0 first chunk, message stream id 1, csid 4 audio / 6 video / 5 data)
  // for the given outgoing chunk size; cached for the most recent chunk size.
  const BufferRef& rtmp_chunks(uint32_t chunk_size) const;
  // Serialized FLV tag + PreviousTagSize (HTTP-FLV bodies of HTTP/1.0 players); cached.
  const BufferRef& flv_tag() const;
  // The same tag as one HTTP/1.1 chunk (RFC 9112 §7.1: "hex-size CRLF tag CRLF"), so chunked
  // HTTP-FLV players share one framed buffer per frame as RTMP players share its chunks; cached.
  const BufferRef& flv_chunk() const;

 private:
  mutable uint32_t rtmp_cache_chunk_size_ = 0;  // next to data_offset: the two fill 8 bytes
  mutable BufferRef rtmp_cache_;
  mutable BufferRef flv_cache_;
  mutable BufferRef flv_chunk_cache_;
};

using FramePtr = std::shared_ptr<const MediaFrame>;

// The facts of a video or audio tag header onto its frame (codec, keyframe, sequence header,
// coded, composition time, data offset); Stream::publish calls them with what it parsed.
void set_tag_facts(MediaFrame& f, const protocol::VideoTagInfo& vi);
void set_tag_facts(MediaFrame& f, const protocol::AudioTagInfo& ai);
// How the tag header names the frame's codec, for a log line: "av01", "other" (video); "audio
// format 9 (Opus)". Parses the header again: for the rare line, never per frame.
std::string codec_description(const MediaFrame& f);

// RTMP chunk stream ids the server uses for outgoing media (per message type).
constexpr uint32_t kRtmpCsidAudio = 4;
constexpr uint32_t kRtmpCsidData = 5;
constexpr uint32_t kRtmpCsidVideo = 6;
constexpr uint32_t kRtmpPlayStreamId = 1;

}  // namespace rill::media
