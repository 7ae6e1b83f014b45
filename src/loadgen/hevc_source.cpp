#include "hevc_source.h"

#include <fstream>
#include <iterator>
#include <stdexcept>

#include "ertmp_tags.h"
#include "rill/protocol/flv_tag.h"

namespace rill::loadgen {

namespace {

using Bytes = std::vector<uint8_t>;

uint8_t nal_type(const Bytes& nal) { return static_cast<uint8_t>((nal[0] >> 1) & 0x3F); }
bool is_vcl(uint8_t t) { return t < 32; }
bool is_irap(uint8_t t) { return t >= 16 && t <= 23; }

// The NAL units between start codes (00 00 01, or 00 00 00 01), trailing zero bytes dropped.
std::vector<Bytes> split_nal_units(std::span<const uint8_t> b) {
  std::vector<Bytes> out;
  size_t start = std::string::npos;
  auto finish = [&](size_t end) {
    while (end > start && b[end - 1] == 0) --end;
    if (end > start + 1)
      out.emplace_back(b.begin() + static_cast<ptrdiff_t>(start), b.begin() + static_cast<ptrdiff_t>(end));
  };
  for (size_t i = 0; i + 2 < b.size(); ++i) {
    if (b[i] == 0 && b[i + 1] == 0 && b[i + 2] == 1) {
      if (start != std::string::npos) finish(i);
      start = i + 3;
      i += 2;
    }
  }
  if (start != std::string::npos) finish(b.size());
  return out;
}

// RBSP of a NAL unit: emulation prevention bytes (00 00 03) removed (H.265 §7.4.2).
Bytes unescape(const Bytes& nal) {
  Bytes out;
  int zeros = 0;
  for (uint8_t v : nal) {
    if (zeros >= 2 && v == 3) {
      zeros = 0;
      continue;
    }
    out.push_back(v);
    zeros = v == 0 ? zeros + 1 : 0;
  }
  return out;
}

// HEVCDecoderConfigurationRecord (ISO/IEC 14496-15 §8.3.3.1.2), 4:2:0 8-bit, 4-byte lengths; the
// general profile/tier/level fields are the SPS's profile_tier_level (H.265 §7.3.3).
Bytes make_hvcc(const Bytes& vps, const Bytes& sps, const Bytes& pps) {
  const Bytes rbsp = unescape(sps);
  if (rbsp.size() < 15) throw std::runtime_error("HEVC Annex B: SPS too short for its profile_tier_level");
  Bytes r = {1};
  r.insert(r.end(), rbsp.begin() + 3, rbsp.begin() + 15);  // profile byte, 4 compat, 6 constraint, level
  r.insert(r.end(), {0xF0, 0x00, 0xFC, 0xFD, 0xF8, 0xF8, 0x00, 0x00, 0x0F, 0x03});
  for (const Bytes* nal : {&vps, &sps, &pps}) {
    r.insert(r.end(), {static_cast<uint8_t>(0x80 | nal_type(*nal)), 0x00, 0x01,
                       static_cast<uint8_t>(nal->size() >> 8), static_cast<uint8_t>(nal->size())});
    r.insert(r.end(), nal->begin(), nal->end());
  }
  return r;
}

SourceTag video_tag(uint32_t ts, bool key, protocol::ExVideoPacketType type, const Bytes& payload) {
  return ex_video_tag(protocol::kFourccHevc, ts, key, type, payload);
}

}  // namespace

bool is_hevc_annexb_path(const std::string& path) {
  for (const char* ext : {".h265", ".265", ".hevc"}) {
    const std::string e(ext);
    if (path.size() > e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0) return true;
  }
  return false;
}

std::vector<SourceTag> hevc_tags_from_annexb(std::span<const uint8_t> annexb, uint32_t fps) {
  if (fps == 0) fps = 25;
  const Bytes* ps[3] = {nullptr, nullptr, nullptr};  // VPS, SPS, PPS
  std::vector<SourceTag> tags;
  Bytes sample;
  bool key = false, have_vcl = false;
  uint32_t frames = 0;
  auto flush = [&] {
    if (!have_vcl) return;
    tags.push_back(video_tag(frames++ * 1000 / fps, key, protocol::ExVideoPacketType::CodedFramesX, sample));
    sample.clear();
    key = have_vcl = false;
  };
  const std::vector<Bytes> nals = split_nal_units(annexb);
  for (const Bytes& nal : nals) {
    const uint8_t t = nal_type(nal);
    // A new access unit: an AUD, or a VCL NAL unit with first_slice_segment_in_pic_flag set
    // (H.265 §7.4.2.4.4) after the previous picture's slices.
    if (t == 35 || (is_vcl(t) && nal.size() > 2 && (nal[2] & 0x80) && have_vcl)) flush();
    if (t >= 32 && t <= 34) {
      if (!ps[t - 32]) ps[t - 32] = &nal;
      continue;  // carried in the SequenceStart
    }
    if (t == 35) continue;
    if (is_vcl(t)) {
      if (!ps[0] || !ps[1] || !ps[2])
        throw std::runtime_error("HEVC Annex B: a picture before the VPS, SPS and PPS");
      if (tags.empty())
        tags.push_back(video_tag(0, true, protocol::ExVideoPacketType::SequenceStart,
                                 make_hvcc(*ps[0], *ps[1], *ps[2])));
      have_vcl = true;
      key = key || is_irap(t);
    }
    const uint32_t n = static_cast<uint32_t>(nal.size());
    sample.insert(sample.end(), {static_cast<uint8_t>(n >> 24), static_cast<uint8_t>(n >> 16),
                                 static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n)});
    sample.insert(sample.end(), nal.begin(), nal.end());
  }
  flush();
  if (frames == 0) throw std::runtime_error("HEVC Annex B: no picture");
  return tags;
}

std::shared_ptr<const FlvSource> load_hevc_annexb(const std::string& path, uint32_t fps) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  const Bytes data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return FlvSource::from_tags(hevc_tags_from_annexb(data, fps));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

}  // namespace rill::loadgen
