#pragma once
// Codec configuration bytes shared by the muxer tests: a Baseline H.264 SPS/PPS and their
// AVCDecoderConfigurationRecord, an AAC LC AudioSpecificConfig, and a hex helper.
#include <cstdint>
#include <vector>

namespace rill::testdata {

using Bytes = std::vector<uint8_t>;

// "6742 c0" -> {0x67, 0x42, 0xc0}; spaces are skipped.
inline Bytes hex(const char* s) {
  Bytes b;
  auto nib = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  while (*s) {
    if (*s == ' ') {
      ++s;
      continue;
    }
    b.push_back(static_cast<uint8_t>(nib(s[0]) << 4 | nib(s[1])));
    s += 2;
  }
  return b;
}

inline const Bytes kSps = hex("6742c01fd9005005bb011000000300100000030140f1832480");
inline const Bytes kPps = hex("68cb83cb20");
inline const Bytes kAvcRecord = [] {
  Bytes r = {0x01, 0x42, 0xC0, 0x1F, 0xFF, 0xE1, 0x00, static_cast<uint8_t>(kSps.size())};
  r.insert(r.end(), kSps.begin(), kSps.end());
  r.insert(r.end(), {0x01, 0x00, static_cast<uint8_t>(kPps.size())});
  r.insert(r.end(), kPps.begin(), kPps.end());
  return r;
}();
inline const Bytes kAsc = {0x12, 0x10};  // AAC LC 44100 Hz stereo

}  // namespace rill::testdata
