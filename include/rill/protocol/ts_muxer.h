#pragma once
// MPEG-2 transport stream muxer (ISO/IEC 13818-1) for HLS segments: one program, H.264 video
// and AAC (ADTS) or MP3 audio. Input is media-neutral (the hub converts FLV messages into
// TsSample); output is appended to a caller's byte vector in whole 188-byte packets.
//
// Fixed layout (the same as ffmpeg's defaults, which every HLS player knows):
//   PAT PID 0x0000, program_number 1, PMT PID 0x1000, video PID 0x100, audio PID 0x101,
//   stream_type 0x1B H.264, 0x0F AAC in ADTS, 0x03 MPEG-1 audio (MP3);
//   PCR PID = video PID when the program has video, else the audio PID.
// Timestamps: PTS/DTS = milliseconds * 90 (90 kHz), modulo 2^33. PCR = DTS - kPcrLeadMs, held at
// 0 while DTS is below kPcrLeadMs, written on every PES start of the PCR PID.
// Between segments only the continuity counters carry over, so segment N+1 continues N.
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "rill/protocol/aac.h"
#include "rill/protocol/avc.h"
#include "rill/protocol/hevc.h"

namespace rill::protocol {

// The codecs of a segmenter's tracks. MPEG-TS carries H.264, HEVC, AAC and MP3 here; AV1, VP9 and
// Opus are fMP4 only (an HLS segmenter switches to fMP4 for them, docs/hls.md).
enum class AudioCodec { AAC, MP3, Opus };
enum class VideoCodec { H264, HEVC, AV1, VP9 };

struct TsStreams {
  bool has_video = true;
  bool has_audio = true;
  AudioCodec audio = AudioCodec::AAC;
  VideoCodec video = VideoCodec::H264;  // HEVC: stream_type 0x24 (13818-1 Table 2-34)
  bool operator==(const TsStreams&) const = default;
};

struct TsSample {
  enum class Kind { Video, Audio } kind = Kind::Video;
  int64_t dts_ms = 0;
  int32_t cts_ms = 0;  // PTS = DTS + cts
  bool keyframe = false;
  std::span<const uint8_t> data;  // video: AVCC access unit; audio: raw AAC AU or MP3 frame(s)
};

// Where a muxer's packets go: append(n) grows the output by n bytes and returns where they
// start (the muxer writes every one of them). HlsSegmenter writes straight into the shared
// buffer the segment is served from (media::SegmentBuffer); VectorTsSink is the plain case.
class TsSink {
 public:
  virtual uint8_t* append(size_t n) = 0;

 protected:
  ~TsSink() = default;
};

class VectorTsSink final : public TsSink {
 public:
  explicit VectorTsSink(std::vector<uint8_t>& out) : out_(out) {}
  uint8_t* append(size_t n) override {
    const size_t pos = out_.size();
    out_.resize(pos + n);
    return out_.data() + pos;
  }

 private:
  std::vector<uint8_t>& out_;
};

class TsMuxer {
 public:
  static constexpr size_t kPacketSize = 188;
  static constexpr uint16_t kPatPid = 0x0000;
  static constexpr uint16_t kPmtPid = 0x1000;
  static constexpr uint16_t kVideoPid = 0x0100;
  static constexpr uint16_t kAudioPid = 0x0101;
  static constexpr uint16_t kProgramNumber = 1;
  static constexpr int64_t kPcrLeadMs = 100;

  struct Stats {
    uint64_t video_written = 0;
    uint64_t audio_written = 0;
    uint64_t skipped_no_config = 0;  // video before an AVC config, AAC before an ASC
    uint64_t skipped_no_stream = 0;  // a kind the program was not configured with
    uint64_t packets = 0;            // 188-byte packets written, PSI included
    uint64_t samples_written() const { return video_written + audio_written; }
    uint64_t samples_skipped() const { return skipped_no_config + skipped_no_stream; }
  };

  explicit TsMuxer(TsStreams streams);

  // Codec configuration; may change mid-stream. A malformed record throws ProtocolError and
  // clears the previous configuration (samples are skipped until a valid one arrives): an ASC
  // that ADTS cannot carry (see check_adts_compatible) counts as malformed.
  void set_avc_config(std::span<const uint8_t> avcc_record);
  void set_aac_config(std::span<const uint8_t> asc);
  void set_hevc_config(std::span<const uint8_t> hvcc_record);  // streams().video == HEVC
  bool has_avc_config() const { return have_avc_; }
  bool has_aac_config() const { return have_aac_; }
  const AvcConfig& avc_config() const { return avc_; }
  const AacConfig& aac_config() const { return aac_; }

  // Appends PAT and PMT (one packet each). Call first in every segment.
  void begin_segment(TsSink& out);
  void begin_segment(std::vector<uint8_t>& out) {
    VectorTsSink sink(out);
    begin_segment(sink);
  }

  // Appends one sample as a PES in whole packets. Samples without their codec config, or of a
  // kind the program lacks, are skipped and counted. Malformed data (an AVCC length past the
  // end, an AAC AU over the ADTS limit, an audio PES over 65535 bytes) throws ProtocolError
  // with `out` and the muxer state unchanged.
  void write(const TsSample& sample, TsSink& out);
  void write(const TsSample& sample, std::vector<uint8_t>& out) {
    VectorTsSink sink(out);
    write(sample, sink);
  }
  // Audio frames (all of Kind::Audio, in order) as one PES with the first frame's PTS, each AAC
  // frame behind its own ADTS header (ISO 13818-7 A.1.2: an ADTS stream is a sequence of frames),
  // the way FFmpeg and nginx-rtmp write audio: one PES per 23 ms AAC frame costs a PES header,
  // an adaptation field and, on average, half a packet of stuffing each (~5 % of a 750 kbps
  // segment). Stats count each frame; errors as write(), with nothing written.
  void write_audio(std::span<const TsSample> frames, TsSink& out);

  const Stats& stats() const { return stats_; }
  const TsStreams& streams() const { return streams_; }

  // 90 kHz, 33 bits (2.4.3.7): milliseconds * 90 modulo 2^33; negative values wrap.
  static uint64_t to_90khz(int64_t ms) { return static_cast<uint64_t>(ms) * 90u & ((uint64_t{1} << 33) - 1); }

 private:
  void write_psi(uint16_t pid, std::span<const uint8_t> section, TsSink& out);
  void packetize(uint16_t pid, bool pcr, bool random_access, uint64_t pcr_base, TsSink& out,
                 std::span<const uint8_t> avcc_tail = {});
  void start_pes(bool video, const TsSample& first);  // the PES header into pes_
  uint8_t next_cc(uint16_t pid);
  uint8_t& cc_of(uint16_t pid);  // the PID's continuity_counter

  TsStreams streams_;
  AvcConfig avc_;
  HevcConfig hevc_;
  AacConfig aac_;
  std::array<uint8_t, kAdtsHeaderSize> adts_ = {};  // the ADTS header of aac_ (its length set per frame)
  bool have_avc_ = false;
  bool have_aac_ = false;
  uint8_t cc_pat_ = 0, cc_pmt_ = 0, cc_video_ = 0, cc_audio_ = 0;
  std::vector<uint8_t> pes_;  // scratch: the PES being packetized (capacity reused)
  Stats stats_;
};

}  // namespace rill::protocol
