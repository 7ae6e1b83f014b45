#pragma once
// Ogg (RFC 3533), as ffmpeg writes Opus audio (-f ogg): pages of a 27-byte header ("OggS",
// version 0, header type, granule position, serial number, page sequence number, CRC, segment
// count) and a segment table of lacing values; a packet is the segments up to one shorter than
// 255 bytes, and may continue on the next page. Pure bytes; malformed input throws
// ProtocolError. The CRC is not checked: the files come from a local encoder.
#include <cstdint>
#include <span>
#include <vector>

namespace rill::protocol {

// The packets of the first logical stream of a whole Ogg file (the stream of the first page's
// serial number; pages of other streams are skipped). A packet still open at the end of the file
// is left out. Throws ProtocolError when a page does not start with "OggS", has a version other
// than 0, or runs past the end.
std::vector<std::vector<uint8_t>> ogg_packets(std::span<const uint8_t> bytes);

}  // namespace rill::protocol
