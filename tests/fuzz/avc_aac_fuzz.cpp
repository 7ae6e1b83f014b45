// Fuzzes the AVC configuration record / SPS parsers, AVCC→Annex B conversion, and the AAC
// AudioSpecificConfig parser / ADTS header builder. Checks output invariants on success.
//
// Input: byte 0 = flags (bits 0-1: AVCC length size 1/2/4/3, bit 2 keyframe), byte 1 = n, then
// n bytes of configuration (parsed as both an AVC record and an ASC), then an AVCC sample.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "rill/protocol/aac.h"
#include "rill/protocol/avc.h"
#include "rill/protocol/error.h"

using namespace rill::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t flags = data[0];
  size_t n = data[1];
  if (n > size - 2) n = size - 2;
  std::span<const uint8_t> config(data + 2, n);
  std::span<const uint8_t> sample(data + 2 + n, size - 2 - n);
  static const uint8_t kLengthSizes[4] = {1, 2, 4, 3};
  const uint8_t length_size = kLengthSizes[flags & 3];

  // AVCC → Annex B with an explicit length size: output = sum over NAL units of 4 + size.
  std::vector<uint8_t> out = {0xAA};
  try {
    avcc_to_annexb(sample, length_size, out);
    size_t expect = 1, off = 0;
    while (off < sample.size()) {
      size_t len = 0;
      for (uint8_t i = 0; i < length_size; ++i) len = len << 8 | sample[off + i];
      off += length_size + len;
      if (len) expect += 4 + len;
    }
    if (out.size() != expect || off != sample.size()) std::abort();
  } catch (const ProtocolError&) {
    if (out.size() != 1) std::abort();  // unchanged on throw
  }

  try {
    AvcConfig cfg = parse_avc_config(config);
    if (cfg.nalu_length_size != 1 && cfg.nalu_length_size != 2 && cfg.nalu_length_size != 4)
      std::abort();
    for (const auto& s : cfg.sps) {
      try {
        AvcSpsInfo info = parse_avc_sps(s);
        if (info.width == 0 || info.height == 0) std::abort();
      } catch (const ProtocolError&) {
      }
    }
    std::vector<uint8_t> au;
    try {
      avcc_to_annexb_access_unit(sample, cfg, flags & 4, au);
      if (au.size() < 5 || au[0] != 0 || au[1] != 0 || au[2] != 0 || au[3] != 1) std::abort();
    } catch (const ProtocolError&) {
      if (!au.empty()) std::abort();
    }
  } catch (const ProtocolError&) {
  }

  try {
    parse_avc_sps(config);
  } catch (const ProtocolError&) {
  }

  try {
    AacConfig asc = parse_aac_config(config);
    auto h = make_adts_header(asc, sample.size());
    size_t len = (size_t{h[3]} & 3) << 11 | size_t{h[4]} << 3 | h[5] >> 5;
    if (h[0] != 0xFF || (h[1] & 0xF6) != 0xF0 || len != sample.size() + kAdtsHeaderSize) std::abort();
  } catch (const ProtocolError&) {
  }
  return 0;
}
