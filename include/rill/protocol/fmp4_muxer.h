#pragma once
// Fragmented MP4 (CMAF-style) muxer for HLS (RFC 8216 §3.3: fragmented MPEG-4 segments; the
// init section is what EXT-X-MAP names, §4.3.2.5). Pure bytes, no clock.
//
//   init_segment(): ftyp + moov (mvhd, one trak per track with an empty sample table, mvex/trex),
//     the video sample entry avc1 + avcC, hvc1 + hvcC (ISO/IEC 14496-15 §5.4 / §8.4), av01 + av1C
//     (AV1 ISO BMFF binding §2.2-2.3) or vp09 + vpcC (VP codec ISO BMFF binding §2.2-2.3), and the
//     audio sample entry mp4a + esds (14496-14 §5.6) or Opus + dOps (Opus in ISO BMFF §4.3)
//     (ISO/IEC 14496-12 §8);
//   add() then flush(): one moof (mfhd; per track a traf with tfhd default-base-is-moof, tfdt
//     version 1 and trun version 1 with per-sample duration, size, flags and composition offset)
//     and one mdat holding the samples, video first (14496-12 §8.8).
//
// Track 1 is video when the stream has video, the next one audio. Timescales: video 90 kHz,
// audio the AAC sampling frequency, or 48 kHz for Opus (Opus in ISO BMFF §4.3: "SHOULD be 48000";
// the pre-skip is dOps' PreSkip, which players apply; no edit list). Input timestamps are milliseconds on the
// caller's timeline (never negative); a sample's duration is the distance to the next sample of its track,
// the last one's to the end time given to flush(). Video samples are length-prefixed NAL units exactly as the
// configuration record declares them (FLV's AVCC/HVCC form), AV1 temporal units (leading temporal delimiters
// dropped, binding §2.4) or VP9 frames (superframes as sent), audio samples raw AAC access units or Opus
// packets: copied unchanged into mdat.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rill::protocol {

class Mp4BoxWriter;

enum class Fmp4VideoCodec : uint8_t { Avc, Hevc, Av1, Vp9 };
enum class Fmp4AudioCodec : uint8_t { Aac, Opus };

struct Fmp4Tracks {
  bool has_video = false;
  Fmp4VideoCodec video_codec = Fmp4VideoCodec::Avc;
  // AVCDecoderConfigurationRecord / HEVCDecoderConfigurationRecord / AV1CodecConfigurationRecord /
  // VPCodecConfigurationRecord (with or without vpcC's version and flags)
  std::vector<uint8_t> video_record;
  // For tkhd and the sample entry (0: taken from an AVC SPS or the AV1 sequence header OBU).
  uint32_t width = 0, height = 0;
  bool has_audio = false;
  Fmp4AudioCodec audio_codec = Fmp4AudioCodec::Aac;
  std::vector<uint8_t> audio_asc;  // AAC AudioSpecificConfig (audio_codec Aac)
  std::vector<uint8_t> opus_head;  // Opus identification header, RFC 7845 §5.1 (audio_codec Opus)
};

struct Fmp4Sample {
  bool video = true;
  int64_t dts_ms = 0;
  int32_t cts_ms = 0;  // PTS = DTS + cts
  bool keyframe = false;
  std::span<const uint8_t> data;
};

class Fmp4Muxer {
 public:
  static constexpr uint32_t kVideoTimescale = 90000;
  static constexpr uint32_t kMovieTimescale = 1000;

  // Validates the configuration (a record, ASC or OpusHead that does not parse throws
  // ProtocolError; so does a stream with neither track).
  explicit Fmp4Muxer(Fmp4Tracks tracks);

  const std::vector<uint8_t>& init_segment() const { return init_; }
  const Fmp4Tracks& tracks() const { return tracks_; }
  uint32_t audio_timescale() const { return audio_timescale_; }

  // Buffers a copy of a sample for the next fragment. A sample of a track the muxer lacks is
  // ignored (returns false). Samples of one track must come in decode order.
  bool add(const Fmp4Sample& s) { return add_sample(s, false); }
  // The same without the copy: the sample's bytes are read where they are by the next flush(),
  // so the caller keeps them alive and unchanged until then (a recording: one copy, into mdat).
  bool add_borrowed(const Fmp4Sample& s) { return add_sample(s, true); }
  // Appends moof + mdat for the buffered samples (nothing when none) and clears them.
  // `end_ms` ends the last sample of each track; a last sample that starts at or after it (audio
  // a little ahead of the video the cut follows) lasts as long as the sample before it.
  void flush(int64_t end_ms, std::vector<uint8_t>& out);
  // The same without copying the samples when every one was borrowed (add_borrowed): `out` gets
  // the moof and the mdat's header, `mdat_payload` the samples in order, as the caller's bytes
  // (out's new bytes followed by them are the fragment flush() makes). When a sample was copied
  // (add), all go into `out` as with flush().
  void flush(int64_t end_ms, std::vector<uint8_t>& out, std::vector<std::span<const uint8_t>>& mdat_payload);

  bool empty() const { return video_.samples.empty() && audio_.samples.empty(); }
  size_t pending_bytes() const { return video_.pending + audio_.pending; }
  // Starts with a video sync sample (or is audio only): a fragment that decodes on its own.
  bool independent() const;
  uint32_t sequence_number() const { return sequence_; }  // mfhd of the last fragment

  // The moof + mdat bytes flush() adds for `n` samples of `payload` bytes at most (two trafs).
  static size_t fragment_overhead(size_t n) { return 256 + 16 * n; }

 private:
  struct Pending {
    int64_t dts_ms;
    int32_t cts_ms;
    bool keyframe;
    uint32_t size;
    const uint8_t* borrowed;  // the caller's bytes (add_borrowed); null: the next ones of `bytes`
  };
  struct Track {
    uint32_t id = 0;
    uint32_t timescale = 1000;
    std::vector<Pending> samples;
    std::vector<uint8_t> bytes;  // the copied samples' bytes
    size_t pending = 0;          // the bytes of all samples, copied or borrowed
    uint32_t last_duration = 0;  // ticks of the last sample written (for a last one without an end)
  };
  bool add_sample(const Fmp4Sample& s, bool borrow);
  void write_moof(int64_t end_ms, std::vector<uint8_t>& out);  // and patches the data offsets
  void clear_samples();
  static void write_mdat_payload(const Track& t, std::vector<uint8_t>& out);
  void build_init();
  void write_trak(Mp4BoxWriter& w, const Track& t, bool video) const;
  void write_sample_entry(Mp4BoxWriter& w, bool video) const;
  // Writes the traf; returns the offset of trun's data_offset field (patched later).
  size_t write_traf(Mp4BoxWriter& w, Track& t, bool video, int64_t end_ms) const;

  Fmp4Tracks tracks_;
  uint32_t audio_timescale_ = 0;
  uint16_t channels_ = 2;
  std::vector<uint8_t> audio_box_;  // esds or dOps payload, made once
  Track video_, audio_;
  uint32_t sequence_ = 0;
  std::vector<uint8_t> init_;
};

// The timescale units of `ms` milliseconds (floor; ms >= 0).
inline uint64_t fmp4_ticks(int64_t ms, uint32_t timescale) {
  return ms <= 0 ? 0 : static_cast<uint64_t>(ms) * timescale / 1000;
}

}  // namespace rill::protocol
