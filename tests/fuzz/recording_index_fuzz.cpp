// Fuzzes RecordingIndex (recording files read back, fMP4 or FLV). The input is fed in pieces whose
// sizes come from its first byte; checks that the index never points past what was fed and that
// whole units tile the file in order. Bit 6 of the first byte indexes every sample
// (keep_samples) and cuts progressive MP4s of the file (protocol/progressive_mp4.h): every sample
// lies in what was fed, every byte run of a cut in the whole units, and a cut's size is its
// head plus its runs.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "rill/protocol/error.h"
#include "rill/protocol/progressive_mp4.h"
#include "rill/protocol/recording_index.h"

using rill::protocol::ProtocolError;
using rill::protocol::RecordingIndex;
using rill::protocol::RecordingIndexLimits;
namespace protocol = rill::protocol;

namespace {

void check_cuts(const RecordingIndex& ix) {
  const std::vector<protocol::ProgressiveMp4File> files = {
      protocol::ProgressiveMp4File{0, 100, ix.tracks(), ix.fragments()},
      protocol::ProgressiveMp4File{1, 100 + ix.duration_seconds(), ix.tracks(), ix.fragments()}};
  for (const auto& f : ix.fragments()) {
    for (const auto& r : f.tracks) {
      for (const auto& s : r.sample_list) {
        if (s.offset + s.size > ix.complete_end()) std::abort();
      }
    }
  }
  for (double from : {0.0, 100.5, 101.0 + ix.duration_seconds()}) {
    protocol::ProgressiveMp4Window w;
    w.from = from;
    w.to = from + 1;
    const auto m = protocol::cut_progressive_mp4(files, w);
    if (!m) continue;
    uint64_t size = m->head.size();
    for (const auto& r : m->runs) {
      if (r.file > 1 || r.offset + r.length > ix.complete_end()) std::abort();
      size += r.length;
    }
    if (size != m->size) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t piece = 1 + data[0] % 64;
  std::span<const uint8_t> in(data + 1, size - 1);
  RecordingIndexLimits lim;
  lim.max_box_bytes = 1 << 16;
  lim.max_entries = 4096;
  lim.keep_samples = data[0] & 0x40;
  lim.max_samples = 1 << 16;
  RecordingIndex ix(lim);
  try {
    for (size_t at = 0; at < in.size(); at += piece) ix.feed(in.subspan(at, std::min(piece, in.size() - at)));
  } catch (const ProtocolError&) {
  }
  if (ix.complete_end() > ix.fed() || ix.fed() > in.size()) std::abort();
  uint64_t end = 0;
  for (const auto& f : ix.fragments()) {
    if (f.offset < end || f.offset + f.size > ix.complete_end()) std::abort();
    end = f.offset + f.size;
  }
  for (const auto& t : ix.tags()) {
    if (t.offset < end || t.offset + t.size > ix.complete_end()) std::abort();
    end = t.offset + t.size;
  }
  if (ix.playable() && ix.duration_seconds() < 0) std::abort();
  if (lim.keep_samples) check_cuts(ix);
  return 0;
}
