#include "rill/protocol/ts_muxer.h"

#include <cstring>
#include <string>

#include "rill/protocol/crc32_mpeg.h"
#include "rill/protocol/error.h"

namespace rill::protocol {
namespace {

constexpr size_t kTsHeader = 4;
constexpr size_t kTsPayload = TsMuxer::kPacketSize - kTsHeader;  // 184
constexpr uint64_t kMask33 = (uint64_t{1} << 33) - 1;
constexpr uint16_t kNoPcrPid = 0x1FFF;  // 2.4.4.9: no PCR in this program

// Table 2-34 stream_type.
constexpr uint8_t kStreamTypeH264 = 0x1B;
constexpr uint8_t kStreamTypeHevc = 0x24;
constexpr uint8_t kStreamTypeAacAdts = 0x0F;
constexpr uint8_t kStreamTypeMpeg1Audio = 0x03;

// Table 2-22 stream_id.
constexpr uint8_t kStreamIdVideo = 0xE0;
constexpr uint8_t kStreamIdAudio = 0xC0;

// Milliseconds (mod 2^64) to 90 kHz mod 2^33; unsigned, so no overflow for any int64 input.
inline uint64_t ms_to_90k(uint64_t ms) { return ms * 90u & kMask33; }

// 2.4.3.7: PTS/DTS as '4-bit prefix' [32..30] '1' [29..15] '1' [14..0] '1'.
inline uint8_t* put_timestamp(uint8_t* p, uint8_t prefix, uint64_t ts) {
  p[0] = static_cast<uint8_t>((prefix << 4) | (((ts >> 30) & 0x07) << 1) | 1);
  p[1] = static_cast<uint8_t>(ts >> 22);
  p[2] = static_cast<uint8_t>((((ts >> 15) & 0x7F) << 1) | 1);
  p[3] = static_cast<uint8_t>(ts >> 7);
  p[4] = static_cast<uint8_t>(((ts & 0x7F) << 1) | 1);
  return p + 5;
}

// 2.4.3.5: program_clock_reference_base(33) reserved(6) program_clock_reference_extension(9).
// The extension stays 0: PCR = base * 300.
inline uint8_t* put_pcr(uint8_t* p, uint64_t base) {
  p[0] = static_cast<uint8_t>(base >> 25);
  p[1] = static_cast<uint8_t>(base >> 17);
  p[2] = static_cast<uint8_t>(base >> 9);
  p[3] = static_cast<uint8_t>(base >> 1);
  p[4] = static_cast<uint8_t>(((base & 1) << 7) | 0x7E);
  p[5] = 0x00;
  return p + 6;
}

}  // namespace

TsMuxer::TsMuxer(TsStreams streams) : streams_(streams) { pes_.reserve(64 * 1024); }

void TsMuxer::set_hevc_config(std::span<const uint8_t> hvcc_record) {
  have_avc_ = false;  // "the video configuration" whichever the codec
  hevc_ = parse_hevc_config(hvcc_record);
  have_avc_ = true;
}

void TsMuxer::set_avc_config(std::span<const uint8_t> avcc_record) {
  have_avc_ = false;
  avc_ = parse_avc_config(avcc_record);
  have_avc_ = true;
}

void TsMuxer::set_aac_config(std::span<const uint8_t> asc) {
  have_aac_ = false;
  AacConfig c = parse_aac_config(asc);
  check_adts_compatible(c);
  adts_ = make_adts_header(c, 0);
  aac_ = c;
  have_aac_ = true;
}

uint8_t& TsMuxer::cc_of(uint16_t pid) {
  return pid == kPatPid ? cc_pat_ : pid == kPmtPid ? cc_pmt_ : pid == kVideoPid ? cc_video_ : cc_audio_;
}

uint8_t TsMuxer::next_cc(uint16_t pid) {
  // 2.4.3.3: continuity_counter increments per packet with payload of a PID, modulo 16.
  uint8_t& cc = cc_of(pid);
  const uint8_t v = cc;
  cc = static_cast<uint8_t>((v + 1) & 0x0F);
  return v;
}

void TsMuxer::write_psi(uint16_t pid, std::span<const uint8_t> section, TsSink& out) {
  uint8_t* p = out.append(kPacketSize);
  std::memset(p, 0xFF, kPacketSize);  // 2.4.4: stuffing bytes 0xFF may follow the section
  p[0] = 0x47;
  p[1] = static_cast<uint8_t>(0x40 | (pid >> 8));  // payload_unit_start_indicator
  p[2] = static_cast<uint8_t>(pid);
  p[3] = static_cast<uint8_t>(0x10 | next_cc(pid));  // adaptation_field_control 01: payload only
  p[4] = 0x00;                                       // pointer_field (2.4.4.2)
  std::memcpy(p + 5, section.data(), section.size());
  ++stats_.packets;
}

void TsMuxer::begin_segment(TsSink& out) {
  // program_association_section (2.4.4.3, Table 2-30).
  uint8_t pat[16] = {
      0x00,  // table_id
      0xB0,
      0x0D,  // section_syntax_indicator 1, '0', reserved '11', section_length 13
      0x00,
      0x01,  // transport_stream_id
      0xC1,  // reserved '11', version_number 0, current_next_indicator 1
      0x00,
      0x00,  // section_number, last_section_number
      static_cast<uint8_t>(kProgramNumber >> 8),
      static_cast<uint8_t>(kProgramNumber),
      static_cast<uint8_t>(0xE0 | (kPmtPid >> 8)),
      static_cast<uint8_t>(kPmtPid),  // program_map_PID
  };
  uint32_t crc = crc32_mpeg2({pat, 12});
  pat[12] = static_cast<uint8_t>(crc >> 24);
  pat[13] = static_cast<uint8_t>(crc >> 16);
  pat[14] = static_cast<uint8_t>(crc >> 8);
  pat[15] = static_cast<uint8_t>(crc);
  write_psi(kPatPid, {pat, 16}, out);

  // TS_program_map_section (2.4.4.8, Table 2-33); no program or ES descriptors.
  const uint16_t pcr_pid = streams_.has_video ? kVideoPid : streams_.has_audio ? kAudioPid : kNoPcrPid;
  uint8_t pmt[32];
  size_t n = 0;
  pmt[n++] = 0x02;  // table_id
  pmt[n++] = 0xB0;  // section_length filled below
  pmt[n++] = 0x00;
  pmt[n++] = static_cast<uint8_t>(kProgramNumber >> 8);
  pmt[n++] = static_cast<uint8_t>(kProgramNumber);
  pmt[n++] = 0xC1;  // version 0, current_next 1
  pmt[n++] = 0x00;
  pmt[n++] = 0x00;
  pmt[n++] = static_cast<uint8_t>(0xE0 | (pcr_pid >> 8));  // reserved '111', PCR_PID
  pmt[n++] = static_cast<uint8_t>(pcr_pid);
  pmt[n++] = 0xF0;  // reserved '1111', program_info_length 0
  pmt[n++] = 0x00;
  auto add_es = [&](uint8_t type, uint16_t pid) {
    pmt[n++] = type;
    pmt[n++] = static_cast<uint8_t>(0xE0 | (pid >> 8));  // reserved '111', elementary_PID
    pmt[n++] = static_cast<uint8_t>(pid);
    pmt[n++] = 0xF0;  // reserved '1111', ES_info_length 0
    pmt[n++] = 0x00;
  };
  if (streams_.has_video)
    add_es(streams_.video == VideoCodec::HEVC ? kStreamTypeHevc : kStreamTypeH264, kVideoPid);
  if (streams_.has_audio)
    add_es(streams_.audio == AudioCodec::AAC ? kStreamTypeAacAdts : kStreamTypeMpeg1Audio, kAudioPid);
  pmt[2] = static_cast<uint8_t>(n + 4 - 3);  // section_length: bytes after it, CRC included
  crc = crc32_mpeg2({pmt, n});
  pmt[n++] = static_cast<uint8_t>(crc >> 24);
  pmt[n++] = static_cast<uint8_t>(crc >> 16);
  pmt[n++] = static_cast<uint8_t>(crc >> 8);
  pmt[n++] = static_cast<uint8_t>(crc);
  write_psi(kPmtPid, {pmt, n}, out);
}

void TsMuxer::write(const TsSample& s, TsSink& out) {
  if (s.kind == TsSample::Kind::Audio) return write_audio(std::span<const TsSample>(&s, 1), out);
  if (!streams_.has_video) {
    ++stats_.skipped_no_stream;
    return;
  }
  if (!have_avc_) {
    ++stats_.skipped_no_config;
    return;
  }
  start_pes(true, s);
  // H.264 with 4-byte lengths: the sample goes from its own bytes into the packets (the length
  // fields turned into start codes there), after the PES header and what Annex B adds before it.
  std::span<const uint8_t> avcc_tail;
  if (streams_.video == VideoCodec::HEVC)
    hevc_to_annexb_access_unit(s.data, hevc_, s.keyframe, pes_);
  else if (avcc_annexb_prefix(s.data, avc_, s.keyframe, pes_))
    avcc_tail = s.data;
  else
    avcc_to_annexb_access_unit(s.data, avc_, s.keyframe, pes_);
  uint64_t pcr_base = 0;  // the PCR PID carries a PCR on every PES start
  if (!(s.dts_ms >= 0 && s.dts_ms < kPcrLeadMs))
    pcr_base = ms_to_90k(static_cast<uint64_t>(s.dts_ms) - static_cast<uint64_t>(kPcrLeadMs));
  packetize(kVideoPid, true, s.keyframe, pcr_base, out, avcc_tail);  // random_access_indicator: keyframes
  ++stats_.video_written;
}

void TsMuxer::write_audio(std::span<const TsSample> frames, TsSink& out) {
  if (frames.empty()) return;
  if (!streams_.has_audio) {
    stats_.skipped_no_stream += frames.size();
    return;
  }
  const bool aac = streams_.audio == AudioCodec::AAC;
  if (aac && !have_aac_) {
    stats_.skipped_no_config += frames.size();
    return;
  }
  start_pes(false, frames.front());
  for (const TsSample& f : frames) {
    if (aac) {
      if (f.data.size() > kAdtsMaxPayload) make_adts_header(aac_, f.data.size());  // throws, saying why
      set_adts_frame_length(adts_.data(), f.data.size());
      pes_.insert(pes_.end(), adts_.begin(), adts_.end());
    }
    pes_.insert(pes_.end(), f.data.begin(), f.data.end());
  }
  // PES_packet_length: the bytes after it (2.4.3.7), bounded for audio.
  const size_t len = pes_.size() - 6;
  if (len > 0xFFFF)
    throw ProtocolError("TS muxer: audio PES of " + std::to_string(len) +
                        " bytes exceeds PES_packet_length limit 65535");
  pes_[4] = static_cast<uint8_t>(len >> 8);
  pes_[5] = static_cast<uint8_t>(len);
  const bool pcr = !streams_.has_video;  // audio only: the audio PID is the PCR PID
  const int64_t dts_ms = frames.front().dts_ms;
  uint64_t pcr_base = 0;
  if (pcr && !(dts_ms >= 0 && dts_ms < kPcrLeadMs))
    pcr_base = ms_to_90k(static_cast<uint64_t>(dts_ms) - static_cast<uint64_t>(kPcrLeadMs));
  // random_access_indicator (2.4.3.5): every AAC/MP3 frame decodes on its own.
  packetize(kAudioPid, pcr, true, pcr_base, out);
  stats_.audio_written += frames.size();
}

// PES header (2.4.3.6, Table 2-21). PTS = DTS + cts; DTS written only when it differs (2.4.3.7).
void TsMuxer::start_pes(bool video, const TsSample& s) {
  const uint64_t dts_ms = static_cast<uint64_t>(s.dts_ms);
  const uint64_t dts = ms_to_90k(dts_ms);
  const uint64_t pts = ms_to_90k(dts_ms + static_cast<uint64_t>(static_cast<int64_t>(s.cts_ms)));
  const bool with_dts = pts != dts;
  pes_.clear();
  pes_.resize(with_dts ? 19 : 14);
  uint8_t* h = pes_.data();
  h[0] = 0x00;  // packet_start_code_prefix
  h[1] = 0x00;
  h[2] = 0x01;
  h[3] = video ? kStreamIdVideo : kStreamIdAudio;
  h[4] = h[5] = 0;  // PES_packet_length, set for audio; 0 (unbounded) for video (2.4.3.7)
  h[6] = 0x84;      // '10', scrambling 00, priority 0, data_alignment_indicator 1, copyright 0, original 0
  h[7] = with_dts ? 0xC0 : 0x80;  // PTS_DTS_flags '11' or '10'
  h[8] = with_dts ? 10 : 5;       // PES_header_data_length
  uint8_t* t = put_timestamp(h + 9, with_dts ? 0x3 : 0x2, pts);
  if (with_dts) put_timestamp(t, 0x1, dts);
}

// The PES in 188-byte packets: the first with its adaptation field (when anything is flagged), the
// full ones between as a header and 184 payload bytes, the last short one padded by stuffing in an
// adaptation field. The PES is pes_ and then `avcc_tail`, an AVCC sample with 4-byte lengths
// whose length fields go out as start codes (avcc_annexb_prefix). Kept in locals (the continuity counter
// too): the packets' bytes are written through uint8_t pointers, which may alias any member, so members would
// be reloaded per byte.
void TsMuxer::packetize(uint16_t pid, bool pcr, bool random_access, uint64_t pcr_base, TsSink& out,
                        std::span<const uint8_t> avcc_tail) {
  const size_t total = pes_.size() + avcc_tail.size();
  // Adaptation field of the first packet: length(1) + flags(1) + PCR(6) when anything is flagged.
  const size_t first_af = (pcr || random_access) ? 2 + (pcr ? 6 : 0) : 0;
  const size_t first_room = kTsPayload - first_af;
  const size_t packets = total <= first_room ? 1 : 1 + (total - first_room + kTsPayload - 1) / kTsPayload;
  uint8_t* p = out.append(packets * kPacketSize);
  const uint8_t* head = pes_.data();
  size_t head_left = pes_.size();
  size_t tail_at = 0;      // the offset in avcc_tail of its next byte out
  size_t next_length = 0;  // the offset in avcc_tail of the next (or current) length field
  // Copies the next n bytes of the PES to dst.
  auto copy_out = [&](uint8_t* dst, size_t n) {
    if (head_left) {
      const size_t k = n < head_left ? n : head_left;
      std::memcpy(dst, head, k);
      head += k;
      head_left -= k;
      dst += k;
      n -= k;
      if (!n) return;
    }
    std::memcpy(dst, avcc_tail.data() + tail_at, n);
    const size_t end = tail_at + n;
    while (next_length < end) {  // 00 00 00 01 over the length fields (or their part) copied
      for (size_t k = 0; k < 4; ++k) {
        const size_t at = next_length + k;
        if (at >= tail_at && at < end) dst[at - tail_at] = k == 3 ? 1 : 0;
      }
      if (next_length + 4 > end) break;  // the field's rest goes with the next packet
      const uint8_t* f = avcc_tail.data() + next_length;
      next_length += 4 + ((size_t{f[0]} << 24) | (size_t{f[1]} << 16) | (size_t{f[2]} << 8) | f[3]);
    }
    tail_at = end;
  };
  size_t left = total;
  uint8_t& cc_slot = cc_of(pid);
  uint8_t cc = cc_slot;
  const auto pid_hi = static_cast<uint8_t>(pid >> 8);
  const auto pid_lo = static_cast<uint8_t>(pid);
  // One packet whose payload is `payload` bytes and whose adaptation field fills the rest.
  auto put_packet = [&](bool first, size_t payload) {
    const size_t af = kTsPayload - payload;  // adaptation field bytes incl. its length byte
    p[0] = 0x47;
    p[1] = static_cast<uint8_t>((first ? 0x40 : 0x00) | pid_hi);
    p[2] = pid_lo;
    // adaptation_field_control '11' (AF + payload) or '01' (payload only); every packet has payload.
    p[3] = static_cast<uint8_t>((af ? 0x30 : 0x10) | cc);
    uint8_t* q = p + kTsHeader;
    if (af) {
      // 2.4.3.4: adaptation_field_length counts the bytes after it; 0 is a single stuffing byte.
      *q++ = static_cast<uint8_t>(af - 1);
      if (af > 1) {
        uint8_t* end = q + (af - 1);
        uint8_t flags = 0;
        if (first && random_access) flags |= 0x40;  // random_access_indicator
        if (first && pcr) flags |= 0x10;            // PCR_flag
        *q++ = flags;
        if (first && pcr) q = put_pcr(q, pcr_base);
        std::memset(q, 0xFF, static_cast<size_t>(end - q));  // stuffing_byte (2.4.3.5)
        q = end;
      }
    }
    copy_out(q, payload);
    left -= payload;
    cc = static_cast<uint8_t>((cc + 1) & 0x0F);
    p += kPacketSize;
  };
  put_packet(true, left < first_room ? left : first_room);
  while (left >= kTsPayload) put_packet(false, kTsPayload);  // full packets: no adaptation field
  if (left) put_packet(false, left);
  cc_slot = cc;
  stats_.packets += packets;
}

}  // namespace rill::protocol
