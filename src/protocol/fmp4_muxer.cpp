#include "rill/protocol/fmp4_muxer.h"

#include <algorithm>
#include <string>

#include "rill/core/byte_order.h"
#include "rill/protocol/aac.h"
#include "rill/protocol/av1.h"
#include "rill/protocol/avc.h"
#include "rill/protocol/error.h"
#include "rill/protocol/mp4_box_writer.h"
#include "rill/protocol/opus.h"
#include "rill/protocol/vp9.h"

namespace rill::protocol {

namespace {

// trun sample_flags (14496-12 §8.8.3.1): sample_depends_on (2 bits at 24), is_non_sync_sample (bit 16).
constexpr uint32_t kSyncSampleFlags = 0x02000000;     // depends on no other sample
constexpr uint32_t kNonSyncSampleFlags = 0x01010000;  // depends on others, not a sync sample

// tfhd flags (§8.8.7.1) and trun flags (§8.8.8.1).
constexpr uint32_t kTfhdDefaultBaseIsMoof = 0x020000;
constexpr uint32_t kTrunDataOffset = 0x000001;
constexpr uint32_t kTrunDuration = 0x000100;
constexpr uint32_t kTrunSize = 0x000200;
constexpr uint32_t kTrunFlags = 0x000400;
constexpr uint32_t kTrunCompositionOffset = 0x000800;

// An MPEG-4 descriptor (14496-1 §8.3.3): tag, then the size in 7-bit groups (4 bytes, the form
// ffmpeg and Apple write, so the layout does not depend on the size).
void descriptor_header(Mp4BoxWriter& w, uint8_t tag, size_t size) {
  w.u8(tag);
  w.u8(static_cast<uint8_t>(0x80 | ((size >> 21) & 0x7F)));
  w.u8(static_cast<uint8_t>(0x80 | ((size >> 14) & 0x7F)));
  w.u8(static_cast<uint8_t>(0x80 | ((size >> 7) & 0x7F)));
  w.u8(static_cast<uint8_t>(size & 0x7F));
}

// esds (14496-14 §5.6): ES_Descriptor { DecoderConfigDescriptor { DecoderSpecificInfo = ASC },
// SLConfigDescriptor }.
void write_esds(Mp4BoxWriter& w, std::span<const uint8_t> asc) {
  const size_t esds = w.begin_full("esds", 0, 0);
  const size_t dsi = 5 + asc.size();
  const size_t dcd = 13 + dsi;
  const size_t sl = 5 + 1;
  descriptor_header(w, 0x03, 3 + 5 + dcd + sl);  // ES_DescrTag
  w.u16(0);                                      // ES_ID
  w.u8(0);                                       // no dependency, URL, OCR
  descriptor_header(w, 0x04, dcd);               // DecoderConfigDescrTag
  w.u8(0x40);                                    // objectTypeIndication: Audio ISO/IEC 14496-3
  w.u8(0x15);                                    // streamType 5 (audio) << 2 | upStream 0 | reserved 1
  w.u24(0);                                      // bufferSizeDB
  w.u32(0);                                      // maxBitrate
  w.u32(0);                                      // avgBitrate
  descriptor_header(w, 0x05, asc.size());        // DecSpecificInfoTag
  w.bytes(asc);
  descriptor_header(w, 0x06, 1);  // SLConfigDescrTag
  w.u8(0x02);                     // predefined: reserved for use in MP4 files
  w.end(esds);
}

}  // namespace

Fmp4Muxer::Fmp4Muxer(Fmp4Tracks tracks) : tracks_(std::move(tracks)) {
  if (!tracks_.has_video && !tracks_.has_audio)
    throw ProtocolError("fmp4: a stream needs a video or an audio track");
  uint32_t next_id = 1;
  if (tracks_.has_video) {
    if (tracks_.video_record.empty()) throw ProtocolError("fmp4: video track without a configuration record");
    const bool size_unknown = tracks_.width == 0 || tracks_.height == 0;
    switch (tracks_.video_codec) {
      case Fmp4VideoCodec::Avc: {
        const AvcConfig c = parse_avc_config(tracks_.video_record);
        if (size_unknown && !c.sps.empty()) {
          try {
            const AvcSpsInfo sps = parse_avc_sps(c.sps.front());
            tracks_.width = sps.width;
            tracks_.height = sps.height;
          } catch (const ProtocolError&) {
            // tkhd/avc1 sizes stay 0: informative only, the decoder reads the SPS itself.
          }
        }
        break;
      }
      case Fmp4VideoCodec::Hevc:
        break;
      case Fmp4VideoCodec::Av1: {
        const Av1Config c = parse_av1_config(tracks_.video_record);
        if (size_unknown) {
          try {
            const Av1FrameSize size = av1_frame_size(c.config_obus);
            tracks_.width = size.width;
            tracks_.height = size.height;
          } catch (const ProtocolError&) {
            // configOBUs may be empty ("MAY"): the sizes stay as given.
          }
        }
        break;
      }
      case Fmp4VideoCodec::Vp9: {
        // vpcC is a FullBox (version 1, flags 0) before the record: kept as the plain record.
        tracks_.video_record = write_vpc_config(parse_vpc_config(tracks_.video_record));
        break;
      }
    }
    video_.id = next_id++;
    video_.timescale = kVideoTimescale;
  }
  if (tracks_.has_audio) {
    if (tracks_.audio_codec == Fmp4AudioCodec::Opus) {
      const OpusConfig c = parse_opus_head(tracks_.opus_head);
      audio_timescale_ = kOpusTimescale;
      channels_ = c.channels;
      audio_box_ = write_opus_dops(c);
    } else {
      const AacConfig c = parse_aac_config(tracks_.audio_asc);
      if (c.sampling_frequency == 0) throw ProtocolError("fmp4: AAC sampling frequency 0");
      audio_timescale_ = c.sampling_frequency;
      channels_ = c.channel_config == 0 ? 2 : std::min<uint16_t>(c.channel_config, 8);
    }
    audio_.id = next_id++;
    audio_.timescale = audio_timescale_;
  }
  build_init();
}

void Fmp4Muxer::build_init() {
  Mp4BoxWriter w(init_);
  // ftyp (§4.3): CMAF-compatible brands as ffmpeg's HLS fMP4 output writes them.
  const size_t ftyp = w.begin("ftyp");
  w.fourcc("iso5");
  w.u32(512);
  for (const char* b : {"iso5", "iso6", "mp41"}) w.fourcc(b);
  w.end(ftyp);

  const size_t moov = w.begin("moov");
  const size_t mvhd = w.begin_full("mvhd", 0, 0);  // §8.2.2
  w.u32(0);                                        // creation_time
  w.u32(0);                                        // modification_time
  w.u32(kMovieTimescale);
  w.u32(0);           // duration: unknown (fragmented)
  w.u32(0x00010000);  // rate 1.0
  w.u16(0x0100);      // volume 1.0
  w.zeros(10);        // reserved
  w.unity_matrix();
  w.zeros(24);                                                           // pre_defined
  w.u32((tracks_.has_video ? 1 : 0) + (tracks_.has_audio ? 1 : 0) + 1);  // next_track_ID
  w.end(mvhd);
  if (tracks_.has_video) write_trak(w, video_, true);
  if (tracks_.has_audio) write_trak(w, audio_, false);
  const size_t mvex = w.begin("mvex");  // §8.8.1: the movie is fragmented
  for (const Track* t : {&video_, &audio_}) {
    if (t->id == 0) continue;
    const size_t trex = w.begin_full("trex", 0, 0);  // §8.8.3
    w.u32(t->id);
    w.u32(1);  // default_sample_description_index
    w.u32(0);  // default_sample_duration
    w.u32(0);  // default_sample_size
    w.u32(0);  // default_sample_flags
    w.end(trex);
  }
  w.end(mvex);
  w.end(moov);
}

void Fmp4Muxer::write_trak(Mp4BoxWriter& w, const Track& t, bool video) const {
  const size_t trak = w.begin("trak");
  const size_t tkhd = w.begin_full("tkhd", 0, 0x000003);  // §8.3.2: track_enabled | track_in_movie
  w.u32(0);                                               // creation_time
  w.u32(0);                                               // modification_time
  w.u32(t.id);
  w.u32(0);  // reserved
  w.u32(0);  // duration
  w.zeros(8);
  w.u16(0);                   // layer
  w.u16(video ? 0 : 1);       // alternate_group
  w.u16(video ? 0 : 0x0100);  // volume
  w.u16(0);                   // reserved
  w.unity_matrix();
  w.u32(video ? tracks_.width << 16 : 0);  // 16.16 fixed point
  w.u32(video ? tracks_.height << 16 : 0);
  w.end(tkhd);

  const size_t mdia = w.begin("mdia");
  const size_t mdhd = w.begin_full("mdhd", 0, 0);  // §8.4.2
  w.u32(0);
  w.u32(0);
  w.u32(t.timescale);
  w.u32(0);       // duration
  w.u16(0x55C4);  // language "und" (ISO-639-2/T, 5 bits per letter - 0x60)
  w.u16(0);
  w.end(mdhd);
  const size_t hdlr = w.begin_full("hdlr", 0, 0);  // §8.4.3
  w.u32(0);
  w.fourcc(video ? "vide" : "soun");
  w.zeros(12);
  const std::string name = video ? "VideoHandler" : "SoundHandler";
  w.bytes(std::span(reinterpret_cast<const uint8_t*>(name.c_str()), name.size() + 1));
  w.end(hdlr);

  const size_t minf = w.begin("minf");
  w.media_header_and_dinf(video);
  const size_t stbl = w.begin("stbl");  // §8.5: empty tables, the samples are in the fragments
  const size_t stsd = w.begin_full("stsd", 0, 0);
  w.u32(1);
  write_sample_entry(w, video);
  w.end(stsd);
  for (const char* box : {"stts", "stsc", "stco"}) {
    const size_t b = w.begin_full(box, 0, 0);
    w.u32(0);  // entry_count
    w.end(b);
  }
  const size_t stsz = w.begin_full("stsz", 0, 0);
  w.u32(0);  // sample_size
  w.u32(0);  // sample_count
  w.end(stsz);
  w.end(stbl);
  w.end(minf);
  w.end(mdia);
  w.end(trak);
}

void Fmp4Muxer::write_sample_entry(Mp4BoxWriter& w, bool video) const {
  if (video) {
    // Sample entry and configuration box per codec: 14496-15 §5.4.2 / §8.4.1, AV1 binding §2.2 /
    // §2.3, VP binding §2.2 / §2.3 (vpcC is a FullBox, version 1).
    const char* entry_type = "avc1";
    const char* config_type = "avcC";
    switch (tracks_.video_codec) {
      case Fmp4VideoCodec::Avc:
        break;
      case Fmp4VideoCodec::Hevc:
        entry_type = "hvc1", config_type = "hvcC";
        break;
      case Fmp4VideoCodec::Av1:
        entry_type = "av01", config_type = "av1C";
        break;
      case Fmp4VideoCodec::Vp9:
        entry_type = "vp09", config_type = "vpcC";
        break;
    }
    const size_t entry = w.begin(entry_type);  // VisualSampleEntry (§12.1.3)
    w.zeros(6);                                // reserved
    w.u16(1);                                  // data_reference_index
    w.zeros(16);                               // pre_defined, reserved, pre_defined[3]
    w.u16(static_cast<uint16_t>(tracks_.width));
    w.u16(static_cast<uint16_t>(tracks_.height));
    w.u32(0x00480000);  // 72 dpi
    w.u32(0x00480000);
    w.u32(0);       // reserved
    w.u16(1);       // frame_count
    w.zeros(32);    // compressorname
    w.u16(0x0018);  // depth
    w.u16(0xFFFF);  // pre_defined = -1
    const size_t cfg =
        tracks_.video_codec == Fmp4VideoCodec::Vp9 ? w.begin_full(config_type, 1, 0) : w.begin(config_type);
    w.bytes(tracks_.video_record);
    w.end(cfg);
    w.end(entry);
    return;
  }
  const bool opus = tracks_.audio_codec == Fmp4AudioCodec::Opus;
  // AudioSampleEntry (§12.2.3; 14496-14 §5.6; Opus in ISO BMFF §4.3.1: samplerate 48000).
  const size_t entry = w.begin(opus ? "Opus" : "mp4a");
  w.zeros(6);
  w.u16(1);  // data_reference_index
  w.zeros(8);
  w.u16(channels_);
  w.u16(16);  // samplesize
  w.u32(0);   // pre_defined, reserved
  w.u32(audio_timescale_ <= 0xFFFF ? audio_timescale_ << 16 : 0);
  if (opus) {
    const size_t dops = w.begin("dOps");  // OpusSpecificBox (§4.3.2)
    w.bytes(audio_box_);
    w.end(dops);
  } else {
    write_esds(w, tracks_.audio_asc);
  }
  w.end(entry);
}

bool Fmp4Muxer::add_sample(const Fmp4Sample& sample, bool borrow) {
  Fmp4Sample s = sample;
  Track& t = s.video ? video_ : audio_;
  if (t.id == 0) return false;
  if (s.video && tracks_.video_codec == Fmp4VideoCodec::Av1) s.data = av1_strip_temporal_delimiters(s.data);
  if (s.data.size() > UINT32_MAX) throw ProtocolError("fmp4: sample larger than 4 GiB");
  t.samples.push_back(Pending{std::max<int64_t>(0, s.dts_ms), s.video ? s.cts_ms : 0, s.keyframe || !s.video,
                              static_cast<uint32_t>(s.data.size()), borrow ? s.data.data() : nullptr});
  if (!borrow) t.bytes.insert(t.bytes.end(), s.data.begin(), s.data.end());
  t.pending += s.data.size();
  return true;
}

bool Fmp4Muxer::independent() const {
  if (video_.id == 0) return true;
  return !video_.samples.empty() && video_.samples.front().keyframe;
}

size_t Fmp4Muxer::write_traf(Mp4BoxWriter& w, Track& t, bool video, int64_t end_ms) const {
  const size_t traf = w.begin("traf");
  const size_t tfhd = w.begin_full("tfhd", 0, kTfhdDefaultBaseIsMoof);  // §8.8.7
  w.u32(t.id);
  w.end(tfhd);
  const size_t tfdt = w.begin_full("tfdt", 1, 0);  // §8.8.12: decode time of the first sample
  w.u64(fmp4_ticks(t.samples.front().dts_ms, t.timescale));
  w.end(tfdt);
  uint32_t flags = kTrunDataOffset | kTrunDuration | kTrunSize | kTrunFlags;
  if (video) flags |= kTrunCompositionOffset;
  const size_t trun = w.begin_full("trun", 1, flags);  // §8.8.8, version 1: signed offsets
  w.u32(static_cast<uint32_t>(t.samples.size()));
  const size_t data_offset_at = w.size();
  w.u32(0);                                                     // data_offset, patched by flush()
  uint8_t* q = w.extend(t.samples.size() * (video ? 16 : 12));  // the sample table, in place
  for (size_t i = 0; i < t.samples.size(); ++i) {
    const Pending& p = t.samples[i];
    const int64_t next_ms = i + 1 < t.samples.size() ? t.samples[i + 1].dts_ms : end_ms;
    const uint64_t a = fmp4_ticks(p.dts_ms, t.timescale), b = fmp4_ticks(next_ms, t.timescale);
    const bool last = i + 1 == t.samples.size();
    uint32_t duration = b > a ? static_cast<uint32_t>(std::min<uint64_t>(b - a, UINT32_MAX)) : 0;
    if (last && duration == 0) duration = t.last_duration;
    t.last_duration = duration;
    q = store_be32(q, duration);
    q = store_be32(q, p.size);
    q = store_be32(q, p.keyframe ? kSyncSampleFlags : kNonSyncSampleFlags);
    if (video)
      q = store_be32(q, static_cast<uint32_t>(
                            static_cast<int32_t>(p.cts_ms * static_cast<int64_t>(t.timescale / 1000))));
  }
  w.end(trun);
  w.end(traf);
  return data_offset_at;
}

// moof for the buffered samples, whose mdat (8 bytes of header, then video, then audio) follows it.
void Fmp4Muxer::write_moof(int64_t end_ms, std::vector<uint8_t>& out) {
  const size_t moof_at = out.size();
  Mp4BoxWriter w(out);
  const size_t moof = w.begin("moof");
  const size_t mfhd = w.begin_full("mfhd", 0, 0);  // §8.8.5
  w.u32(++sequence_);
  w.end(mfhd);
  size_t video_offset_at = 0, audio_offset_at = 0;
  if (!video_.samples.empty()) video_offset_at = write_traf(w, video_, true, end_ms);
  if (!audio_.samples.empty()) audio_offset_at = write_traf(w, audio_, false, end_ms);
  w.end(moof);
  // default-base-is-moof: data offsets count from the first byte of moof.
  const size_t mdat_payload = out.size() - moof_at + 8;
  if (video_offset_at) w.patch_u32(video_offset_at, static_cast<uint32_t>(mdat_payload));
  if (audio_offset_at) w.patch_u32(audio_offset_at, static_cast<uint32_t>(mdat_payload + video_.pending));
}

void Fmp4Muxer::clear_samples() {
  for (Track* t : {&video_, &audio_}) {
    t->samples.clear();
    t->bytes.clear();
    t->pending = 0;
  }
}

void Fmp4Muxer::flush(int64_t end_ms, std::vector<uint8_t>& out) {
  if (empty()) return;
  write_moof(end_ms, out);
  const size_t need = out.size() + 8 + pending_bytes();  // growing as a vector does, not to fit
  if (out.capacity() < need) out.reserve(std::max(need, 2 * out.capacity()));
  Mp4BoxWriter w(out);
  const size_t mdat = w.begin("mdat");  // §8.1.1
  write_mdat_payload(video_, out);
  write_mdat_payload(audio_, out);
  w.end(mdat);
  clear_samples();
}

void Fmp4Muxer::flush(int64_t end_ms, std::vector<uint8_t>& out,
                      std::vector<std::span<const uint8_t>>& mdat_payload) {
  if (!video_.bytes.empty() || !audio_.bytes.empty()) return flush(end_ms, out);  // a copied sample
  if (empty()) return;
  write_moof(end_ms, out);
  mdat_payload.reserve(mdat_payload.size() + video_.samples.size() + audio_.samples.size());
  Mp4BoxWriter w(out);
  w.u32(static_cast<uint32_t>(8 + pending_bytes()));  // §8.1.1: the mdat's header, its samples after it
  w.fourcc("mdat");
  for (const Track* t : {&video_, &audio_}) {
    for (const Pending& p : t->samples) {
      if (p.size > 0) mdat_payload.emplace_back(p.borrowed, p.size);
    }
  }
  clear_samples();
}

// The track's samples in order, each from where it is: the copies in `bytes`, or the caller's.
void Fmp4Muxer::write_mdat_payload(const Track& t, std::vector<uint8_t>& out) {
  if (t.bytes.size() == t.pending) {  // all copied
    out.insert(out.end(), t.bytes.begin(), t.bytes.end());
    return;
  }
  const uint8_t* copied = t.bytes.data();
  for (const Pending& p : t.samples) {  // flush() reserved the room: no reallocation
    const uint8_t* src = p.borrowed ? p.borrowed : copied;
    if (!p.borrowed) copied += p.size;
    out.insert(out.end(), src, src + p.size);
  }
}

}  // namespace rill::protocol
