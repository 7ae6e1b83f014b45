// Fuzz target: AMF0 decode -> re-encode -> decode again must reproduce the values.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "rill/protocol/amf0.h"

using namespace rill::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> in(data, size);
  std::vector<Amf0Value> values;
  Amf0Decoder dec(in);
  try {
    while (!dec.at_end()) values.push_back(dec.decode());
  } catch (const ProtocolError&) {
    // Keep what decoded before the error; it must still round-trip.
  }
  for (const auto& v : values) (void)v.to_debug_string(256);

  std::vector<uint8_t> encoded = amf0_encode_all(values);
  // What decoded within the limits re-encodes within them: decoding it must succeed (a
  // ProtocolError escaping here is a bug the fuzzer reports) and give the same values.
  std::vector<Amf0Value> again = Amf0Decoder(encoded).decode_all();
  if (again != values) std::abort();
  if (amf0_encode_all(again) != encoded) std::abort();
  return 0;
}
