#pragma once
// Mp4BoxWriter: appends ISO base media file format boxes (ISO/IEC 14496-12 §4.2) to a byte
// vector — big-endian fields, and box headers whose 32-bit size is patched when the box closes,
// so boxes nest naturally. Pure bytes; used by the fMP4 muxer (fmp4_muxer.h).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace rill::protocol {

class Mp4BoxWriter {
 public:
  explicit Mp4BoxWriter(std::vector<uint8_t>& out) : out_(out) {}

  // Opens a box of 4-character `type`; returns its offset for end(). A FullBox (§4.2) adds
  // its version and 24-bit flags.
  size_t begin(std::string_view type);
  size_t begin_full(std::string_view type, uint8_t version, uint32_t flags);
  // Writes the box's size (bytes from its offset to the end of `out`) into its header.
  void end(size_t box_offset);

  void u8(uint8_t v) { out_.push_back(v); }
  void u16(uint16_t v);
  void u24(uint32_t v);
  void u32(uint32_t v);
  void u64(uint64_t v);
  void zeros(size_t n) { out_.insert(out_.end(), n, 0); }
  void bytes(std::span<const uint8_t> b) { out_.insert(out_.end(), b.begin(), b.end()); }
  // Room for `n` bytes at the end, written by the caller through the pointer (valid until the
  // next write): a table of fields in one step, not a call per field.
  uint8_t* extend(size_t n) {
    const size_t at = out_.size();
    out_.resize(at + n);
    return out_.data() + at;
  }
  void fourcc(std::string_view t);
  // The unity matrix of tkhd/mvhd (§8.2.2.3).
  void unity_matrix();
  // Overwrites a 32-bit field written earlier (e.g. trun's data_offset once moof's size is known).
  void patch_u32(size_t offset, uint32_t v);

  size_t size() const { return out_.size(); }

  // The start of a track's minf (§8.4.4): its media header, vmhd (§12.1.2) or smhd (§12.2.2),
  // and dinf/dref with one self-contained url entry (§8.7.1: the media is in this file).
  void media_header_and_dinf(bool video);

 private:
  std::vector<uint8_t>& out_;
};

}  // namespace rill::protocol
