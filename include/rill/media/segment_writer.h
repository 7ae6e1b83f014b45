#pragma once
// SegmentWriter: the container half of a segmenter. The segmenter (HlsSegmenter) keeps the plan —
// where runs, segments and LL-HLS parts begin and end, which samples go in — and hands the samples
// in between to one writer, which turns them into one container's bytes: MPEG-TS
// (ts_segment_writer.h) or fragmented MP4 (fmp4_segment_writer.h). Another output format
// (recording, renditions) is another writer, not a branch in the segmenter.
//
// Calls come in this order: start_run when the tracks or their codec configuration change (the
// first segment included), then per segment begin_segment, write_video / write_audio in decode
// order, cut_part (LL-HLS) and finish_segment. A writer counts the samples it wrote, skipped and
// dropped (malformed), and logs why it dropped one.
//
// media/: no socket, no clock. One worker thread.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "rill/core/buffer.h"
#include "rill/protocol/ts_muxer.h"

namespace rill::media {

// The tracks of a run and their codec configuration (the spans are read during start_run only).
struct SegmentTracks {
  protocol::TsStreams streams;            // which tracks, with which codecs
  std::span<const uint8_t> video_record;  // AVC / HEVC / AV1 / VP9 decoder configuration record (has_video)
  std::span<const uint8_t> audio_asc;     // AAC AudioSpecificConfig (has_audio with AAC)
  std::span<const uint8_t> opus_head;     // Opus identification header (has_audio with Opus)
  uint32_t width = 0, height = 0;         // VP9: from a key frame (other codecs' records say it); 0 unknown
};

// One coded sample on the segment timeline (milliseconds).
struct SegmentSample {
  int64_t dts_ms = 0;
  int32_t cts_ms = 0;  // PTS = DTS + cts (video)
  bool keyframe = false;
  // video: length-prefixed NAL units, an AV1 temporal unit or a VP9 frame; audio: a raw AAC AU,
  // MP3 frame(s) or an Opus packet
  std::span<const uint8_t> data;
};

// An LL-HLS part (RFC 8216bis §4.4.4.9): its bytes come again in its segment's.
struct SegmentPart {
  BufferRef bytes;
  bool independent = false;  // starts with a video sync sample or is audio only (INDEPENDENT=YES)
};

struct SampleCounts {
  uint64_t written = 0;
  uint64_t skipped = 0;  // the container or its configuration cannot take it
  uint64_t dropped = 0;  // malformed (the muxer threw ProtocolError)
};

enum class WriteResult : uint8_t { Written, Skipped, Dropped };

class SegmentWriter {
 public:
  virtual ~SegmentWriter() = default;

  virtual std::string_view container() const = 0;  // "MPEG-TS", "fMP4": for log lines
  virtual bool carries(protocol::AudioCodec codec) const = 0;
  virtual bool carries(protocol::VideoCodec codec) const = 0;

  // A new run: fresh muxer state for `tracks`. Returns the initialization section the run's
  // segments need (fMP4: ftyp + moov, named by EXT-X-MAP, RFC 8216 §4.3.2.5), or an empty ref
  // (MPEG-TS; or a configuration the muxer refused, whose samples are then skipped).
  virtual BufferRef start_run(const SegmentTracks& tracks) = 0;
  virtual void begin_segment() = 0;
  virtual WriteResult write_video(const SegmentSample& s) = 0;
  // A writer may hold audio to write it in groups (MPEG-TS): counted when written.
  virtual void write_audio(const SegmentSample& s) = 0;
  // LL-HLS: true while samples wait for the next part.
  virtual bool part_pending() const { return false; }
  // LL-HLS: the samples since the last part become one, ending at `end_ms`; nothing when none
  // wait (or the container has no parts).
  virtual std::optional<SegmentPart> cut_part(int64_t /*end_ms*/) { return std::nullopt; }
  // Ends the open segment at `end_ms`: its bytes, or an empty ref when no sample was written.
  virtual BufferRef finish_segment(int64_t end_ms) = 0;

  virtual uint64_t samples() const = 0;  // written into the open segment
  // The bytes the open segment would have if it finished now, at most (held samples included).
  virtual size_t size() const = 0;
  virtual size_t capacity() const = 0;  // memory its builders hold
  virtual const SampleCounts& counts() const = 0;
};

// Sizing for the segment cap (hls.max_segment_size): at most what one sample adds to a segment in
// MPEG-TS — whole 188-byte packets, a PES header, Annex B start codes, an AUD and the parameter
// sets before an IDR, an ADTS header. fMP4 adds less (the sample and 16 bytes of trun), so the
// one bound holds for either writer.
inline constexpr size_t kSegmentStartBytes = 2 * protocol::TsMuxer::kPacketSize;  // PAT + PMT
// `ps_bytes`: the parameter sets with start codes; `length_size`: the NAL unit length field.
size_t video_sample_bound(size_t n, size_t ps_bytes, uint8_t length_size);
size_t audio_sample_bound(size_t n);
// Whole TS packets for a PES of `pes` bytes, at most (every packet carries >= 176 payload bytes).
size_t ts_bytes_for_pes(size_t pes);
inline constexpr size_t kPesHeaderMax = 19;  // PES header with PTS and DTS (13818-1 2.4.3.6)

}  // namespace rill::media
