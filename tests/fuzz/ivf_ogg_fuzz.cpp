// Fuzzes the IVF and Ogg file readers (rill-bench's AV1 + Opus sources). Input: selector(1: 0 IVF,
// 1 Ogg), then the file's bytes.
// Invariants: no crash; every IVF frame is a view inside the input; Ogg packets add up to no more
// bytes than the input holds.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "rill/protocol/error.h"
#include "rill/protocol/ivf_file.h"
#include "rill/protocol/ogg_file.h"

using namespace rill::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::span<const uint8_t> in(data + 1, size - 1);
  try {
    if (data[0] % 2 == 0) {
      for (const IvfFrame& f : parse_ivf(in).frames) {
        if (f.data.data() < in.data() || f.data.data() + f.data.size() > in.data() + in.size()) std::abort();
      }
    } else {
      size_t total = 0;
      for (const auto& p : ogg_packets(in)) total += p.size();
      if (total > in.size()) std::abort();
    }
  } catch (const ProtocolError&) {
  }
  return 0;
}
