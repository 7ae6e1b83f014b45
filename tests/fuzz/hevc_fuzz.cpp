// Fuzzes the HEVC config record parser and the Annex B access unit writer.
// Input: flags(1: bit0 keyframe) n(1) record(n), then one length-prefixed sample.
// Invariants: no crash; a parsed record has a VPS, SPS and PPS and a length size of 1, 2 or 4;
// a throwing access unit leaves the output unchanged; a written one starts with a start code.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "rill/protocol/error.h"
#include "rill/protocol/hevc.h"

using namespace rill::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const bool key = data[0] & 1;
  const size_t n = data[1] < size - 2 ? data[1] : size - 2;
  HevcConfig c;
  try {
    c = parse_hevc_config(std::span<const uint8_t>(data + 2, n));
  } catch (const ProtocolError&) {
    return 0;
  }
  if (c.vps.empty() || c.sps.empty() || c.pps.empty()) std::abort();
  if (c.nalu_length_size != 1 && c.nalu_length_size != 2 && c.nalu_length_size != 4) std::abort();
  std::vector<uint8_t> out = {0xEE};
  try {
    hevc_to_annexb_access_unit(std::span<const uint8_t>(data + 2 + n, size - 2 - n), c, key, out);
  } catch (const ProtocolError&) {
    if (out.size() != 1) std::abort();
    return 0;
  }
  if (out.size() < 5 || out[1] != 0 || out[2] != 0 || out[3] != 0 || out[4] != 1) std::abort();
  return 0;
}
