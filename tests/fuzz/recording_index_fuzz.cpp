// Fuzzes RecordingIndex (recording files read back, fMP4 or FLV). The input is fed in pieces whose
// sizes come from its first byte; checks that the index never points past what was fed and that
// whole units tile the file in order.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "rill/protocol/error.h"
#include "rill/protocol/recording_index.h"

using rill::protocol::ProtocolError;
using rill::protocol::RecordingIndex;
using rill::protocol::RecordingIndexLimits;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t piece = 1 + data[0] % 64;
  std::span<const uint8_t> in(data + 1, size - 1);
  RecordingIndexLimits lim;
  lim.max_box_bytes = 1 << 16;
  lim.max_entries = 4096;
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
  return 0;
}
