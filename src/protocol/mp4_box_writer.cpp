#include "rill/protocol/mp4_box_writer.h"

#include "rill/core/byte_order.h"
#include "rill/protocol/error.h"

namespace rill::protocol {

size_t Mp4BoxWriter::begin(std::string_view type) {
  const size_t at = out_.size();
  u32(0);  // size, patched by end()
  fourcc(type);
  return at;
}

size_t Mp4BoxWriter::begin_full(std::string_view type, uint8_t version, uint32_t flags) {
  const size_t at = begin(type);
  u8(version);
  u24(flags);
  return at;
}

void Mp4BoxWriter::end(size_t box_offset) {
  const size_t n = out_.size() - box_offset;
  if (n > UINT32_MAX) throw ProtocolError("mp4 box larger than 4 GiB");
  patch_u32(box_offset, static_cast<uint32_t>(n));
}

void Mp4BoxWriter::u16(uint16_t v) {
  const size_t at = out_.size();
  out_.resize(at + 2);
  store_be16(out_.data() + at, v);
}

void Mp4BoxWriter::u24(uint32_t v) {
  out_.push_back(static_cast<uint8_t>(v >> 16));
  out_.push_back(static_cast<uint8_t>(v >> 8));
  out_.push_back(static_cast<uint8_t>(v));
}

void Mp4BoxWriter::u32(uint32_t v) {  // one resize, not four push_backs: trun writes 4 per sample
  const size_t at = out_.size();
  out_.resize(at + 4);
  store_be32(out_.data() + at, v);
}

void Mp4BoxWriter::u64(uint64_t v) {
  u32(static_cast<uint32_t>(v >> 32));
  u32(static_cast<uint32_t>(v));
}

void Mp4BoxWriter::fourcc(std::string_view t) {
  for (size_t i = 0; i < 4; ++i) out_.push_back(i < t.size() ? static_cast<uint8_t>(t[i]) : ' ');
}

void Mp4BoxWriter::unity_matrix() {
  // { 0x00010000,0,0, 0,0x00010000,0, 0,0,0x40000000 } (16.16 and 2.30 fixed point)
  const uint32_t m[9] = {0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000};
  for (uint32_t v : m) u32(v);
}

void Mp4BoxWriter::media_header_and_dinf(bool video) {
  if (video) {
    const size_t vmhd = begin_full("vmhd", 0, 1);
    zeros(8);  // graphicsmode, opcolor
    end(vmhd);
  } else {
    const size_t smhd = begin_full("smhd", 0, 0);
    zeros(4);  // balance, reserved
    end(smhd);
  }
  const size_t dinf = begin("dinf");
  const size_t dref = begin_full("dref", 0, 0);
  u32(1);
  end(begin_full("url ", 0, 1));
  end(dref);
  end(dinf);
}

void Mp4BoxWriter::patch_u32(size_t offset, uint32_t v) { store_be32(out_.data() + offset, v); }

}  // namespace rill::protocol
