#pragma once
// IVF, the simple container libaom/libvpx and ffmpeg (-f ivf) write AV1 and VP9 frames in: a
// 32-byte file header ("DKIF", version 0, header size, FourCC, width, height, time base), then
// per frame a 12-byte header (frame size u32le, presentation timestamp u64le) and the frame. All
// fields little-endian. Pure bytes; malformed input throws ProtocolError.
#include <cstdint>
#include <span>
#include <vector>

namespace rill::protocol {

struct IvfFrame {
  uint64_t pts = 0;               // in time base units
  std::span<const uint8_t> data;  // a view into the file's bytes
};

struct IvfFile {
  uint32_t fourcc = 0;  // e.g. 'AV01' as the bytes read in order, big-endian in this value
  uint16_t width = 0, height = 0;
  uint32_t timebase_num = 0, timebase_den = 0;  // seconds per pts unit = num / den
  std::vector<IvfFrame> frames;
};

// Parses a whole IVF file held in `bytes` (the frames are views into it). Throws ProtocolError
// on a missing "DKIF" signature, a header size under 32, a zero time base, or a frame whose size
// runs past the end.
IvfFile parse_ivf(std::span<const uint8_t> bytes);

}  // namespace rill::protocol
