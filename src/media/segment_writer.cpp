#include "rill/media/segment_writer.h"

#include "rill/protocol/aac.h"

namespace rill::media {

namespace {
constexpr size_t kFirstPayloadMin = protocol::TsMuxer::kPacketSize - 4 - 8;  // TS header + AF with PCR
}  // namespace

size_t ts_bytes_for_pes(size_t pes) {
  return (pes + kFirstPayloadMin - 1) / kFirstPayloadMin * protocol::TsMuxer::kPacketSize;
}

size_t video_sample_bound(size_t n, size_t ps_bytes, uint8_t length_size) {
  // Annex B start codes replace the length fields; with 1- or 2-byte length fields a NAL unit
  // may grow up to 2.5x (1 + 1 bytes -> 4 + 1). AUD (6) and SPS/PPS are added before an IDR.
  const size_t payload = length_size >= 4 ? n : n / 2 * 5 + 5;
  return ts_bytes_for_pes(kPesHeaderMax + 7 + ps_bytes + payload);
}

size_t audio_sample_bound(size_t n) {
  return ts_bytes_for_pes(kPesHeaderMax + protocol::kAdtsHeaderSize + n);
}

}  // namespace rill::media
