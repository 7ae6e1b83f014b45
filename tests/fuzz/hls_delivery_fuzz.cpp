// Fuzzes the LL-HLS delivery directives parser (a request's query) and the blocking verdict.
// Invariants: no crash; either ProtocolError or directives where a part implies an msn; the
// verdict is Ready whenever the asked-for position is already complete.
//
// Input: the query bytes; the first 3 bytes also give a progress (next_msn, open_parts, ended).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "rill/protocol/error.h"
#include "rill/protocol/hls_delivery.h"

using namespace rill::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view query(reinterpret_cast<const char*>(data), size);
  HlsDeliveryDirectives d;
  try {
    d = parse_hls_delivery_directives(query);
  } catch (const ProtocolError&) {
    return 0;
  }
  if (d.part && !d.msn) std::abort();
  if (!d.msn || size < 3) return 0;
  const HlsProgress p{data[0], static_cast<uint64_t>(data[1] % 8), (data[2] & 1) != 0};
  const HlsBlockVerdict v = hls_block_verdict(p, *d.msn, d.part);
  if (*d.msn < p.next_msn && v != HlsBlockVerdict::Ready) std::abort();
  if (p.ended && v != HlsBlockVerdict::Ready) std::abort();
  return 0;
}
