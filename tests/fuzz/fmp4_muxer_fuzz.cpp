// Fuzzes Fmp4Muxer: configuration records from the network (avcC, ASC) and samples. Checks that
// the init segment and every fragment are whole boxes whose sizes tile the output, and that each
// fragment is one moof followed by one mdat.
//
// Input: byte 0 = bit0 video, bit1 audio; then avc record length(1) + bytes, ASC length(1) +
// bytes; then records: op(1) (bit0 audio, bit1 keyframe, bit2 flush after), dts_delta(2, signed
// BE, ms), cts(2, signed BE, ms), length(2, BE), data(length, clamped).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "rill/protocol/error.h"
#include "rill/protocol/fmp4_muxer.h"

using rill::protocol::Fmp4Muxer;
using rill::protocol::Fmp4Sample;
using rill::protocol::Fmp4Tracks;
using rill::protocol::ProtocolError;

namespace {

uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

// Walks the top-level boxes of out[from..]; returns their types concatenated.
std::vector<uint32_t> walk(const std::vector<uint8_t>& out, size_t from) {
  std::vector<uint32_t> types;
  size_t off = from;
  while (off < out.size()) {
    if (out.size() - off < 8) std::abort();
    const uint32_t size = be32(&out[off]);
    if (size < 8 || size > out.size() - off) std::abort();
    types.push_back(be32(&out[off + 4]));
    off += size;
  }
  return types;
}

std::span<const uint8_t> take(const uint8_t*& p, size_t& left) {
  if (left == 0) return {};
  size_t n = *p++;
  --left;
  if (n > left) n = left;
  std::span<const uint8_t> s(p, n);
  p += n;
  left -= n;
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t* p = data + 1;
  size_t left = size - 1;
  Fmp4Tracks t;
  t.has_video = data[0] & 1;
  t.has_audio = data[0] & 2;
  const auto record = take(p, left);
  const auto asc = take(p, left);
  t.video_record.assign(record.begin(), record.end());
  t.audio_asc.assign(asc.begin(), asc.end());
  std::unique_ptr<Fmp4Muxer> mux;
  try {
    mux = std::make_unique<Fmp4Muxer>(t);
  } catch (const ProtocolError&) {
    return 0;
  }
  if (walk(mux->init_segment(), 0).size() != 2) std::abort();  // ftyp, moov
  std::vector<uint8_t> out;
  int64_t dts = 0;
  while (left >= 7) {
    const uint8_t op = p[0];
    const int16_t delta = static_cast<int16_t>(p[1] << 8 | p[2]);
    const int16_t cts = static_cast<int16_t>(p[3] << 8 | p[4]);
    size_t len = static_cast<size_t>(p[5] << 8 | p[6]);
    p += 7;
    left -= 7;
    if (len > left) len = left;
    dts += delta;
    mux->add(Fmp4Sample{!(op & 1), dts, cts, (op & 2) != 0, std::span<const uint8_t>(p, len)});
    p += len;
    left -= len;
    if (op & 4) {
      const size_t from = out.size();
      mux->flush(dts + 40, out);
      const auto types = walk(out, from);
      if (!types.empty() && (types.size() != 2 || types[0] != 0x6d6f6f66 || types[1] != 0x6d646174)) std::abort();
    }
  }
  const size_t from = out.size();
  mux->flush(dts + 40, out);
  walk(out, from);
  return 0;
}
