// Fuzzes TsMuxer with a sequence of records; checks that every output is whole 188-byte packets
// with sync bytes, and that continuity counters advance by one per PID.
//
// Input: byte 0 = streams (bit0 has_video, bit1 has_audio, bit2 MP3 instead of AAC, bit3 HEVC
// instead of H.264), then records:
//   op(1): bits 0-1 0 video, 1 audio, 2 video config (AVC or HEVC record), 3 AAC config; bit 2
//          begin_segment first;
//          bit 3 keyframe
//   dts_delta(2, signed BE, ms)  cts(2, signed BE, ms)  length(2, BE)  data(length, clamped)
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "rill/protocol/error.h"
#include "rill/protocol/ts_muxer.h"

using rill::protocol::AudioCodec;
using rill::protocol::ProtocolError;
using rill::protocol::TsMuxer;
using rill::protocol::TsSample;

namespace {

void check(const std::vector<uint8_t>& out, size_t from, int (&last_cc)[0x2000]) {
  if (out.size() % TsMuxer::kPacketSize != 0) std::abort();
  for (size_t i = from; i < out.size(); i += TsMuxer::kPacketSize) {
    const uint8_t* p = &out[i];
    if (p[0] != 0x47) std::abort();
    int pid = (p[1] & 0x1F) << 8 | p[2];
    int afc = (p[3] >> 4) & 3;
    if (!(afc & 1)) std::abort();               // every packet carries payload
    if ((afc & 2) && p[4] > 183) std::abort();  // adaptation field inside the packet
    int cc = p[3] & 0x0F;
    if (last_cc[pid] >= 0 && cc != ((last_cc[pid] + 1) & 0x0F)) std::abort();
    last_cc[pid] = cc;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  rill::protocol::TsStreams streams;
  streams.has_video = data[0] & 1;
  streams.has_audio = data[0] & 2;
  streams.audio = (data[0] & 4) ? AudioCodec::MP3 : AudioCodec::AAC;
  streams.video = (data[0] & 8) ? rill::protocol::VideoCodec::HEVC : rill::protocol::VideoCodec::H264;
  TsMuxer mux(streams);
  int last_cc[0x2000];
  for (int& c : last_cc) c = -1;
  std::vector<uint8_t> out;
  int64_t dts = 0;
  size_t pos = 1;
  while (pos + 7 <= size) {
    const uint8_t op = data[pos];
    const int16_t delta = static_cast<int16_t>(data[pos + 1] << 8 | data[pos + 2]);
    const int16_t cts = static_cast<int16_t>(data[pos + 3] << 8 | data[pos + 4]);
    size_t len = static_cast<size_t>(data[pos + 5] << 8 | data[pos + 6]);
    pos += 7;
    if (len > size - pos) len = size - pos;
    std::span<const uint8_t> payload(data + pos, len);
    pos += len;
    dts += delta;
    if (out.size() > (1u << 20)) out.clear();
    const size_t before = out.size();
    try {
      if (op & 4) mux.begin_segment(out);
      switch (op & 3) {
        case 0:
        case 1: {
          TsSample s{(op & 3) == 0 ? TsSample::Kind::Video : TsSample::Kind::Audio, dts, cts, (op & 8) != 0,
                     payload};
          if ((op & 3) == 1 && (op & 0x10)) {
            // An audio group (TsMuxer::write_audio): the payload split into up to 4 frames.
            const size_t parts = 1 + (op >> 5 & 3);
            std::vector<TsSample> group;
            for (size_t i = 0, at = 0; i < parts; ++i) {
              const size_t n = i + 1 == parts ? payload.size() - at : payload.size() / parts;
              group.push_back(TsSample{TsSample::Kind::Audio, dts + static_cast<int64_t>(i) * 23, 0, false,
                                       payload.subspan(at, n)});
              at += n;
            }
            rill::protocol::VectorTsSink sink(out);
            mux.write_audio(group, sink);
          } else {
            mux.write(s, out);
          }
          break;
        }
        case 2:
          if (streams.video == rill::protocol::VideoCodec::HEVC)
            mux.set_hevc_config(payload);
          else
            mux.set_avc_config(payload);
          break;
        case 3:
          mux.set_aac_config(payload);
          break;
      }
    } catch (const ProtocolError&) {
    }
    check(out, before, last_cc);
  }
  const auto& st = mux.stats();
  if (st.packets * TsMuxer::kPacketSize < out.size()) std::abort();
  return 0;
}
