#pragma once
// Shared helpers for the media/ unit tests: hand-built FLV tag bodies and frames.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "rill/core/buffer.h"
#include "rill/media/media_frame.h"
#include "rill/protocol/amf0.h"
#include "rill/protocol/error.h"
#include "rill/protocol/flv_tag.h"

namespace rill::media::testutil {

inline BufferRef bytes(std::initializer_list<uint8_t> b) {
  std::vector<uint8_t> v(b);
  return SharedBuffer::copy_of(std::span<const uint8_t>(v));
}
inline BufferRef bytes(const std::vector<uint8_t>& v) { return SharedBuffer::copy_of(std::span<const uint8_t>(v)); }

// AVC sequence header: AVCDecoderConfigurationRecord with one SPS and one PPS.
inline BufferRef avc_seq_header() {
  return bytes({0x17, 0x00, 0x00, 0x00, 0x00, 0x01, 0x64, 0x00, 0x1f, 0xff, 0xe1, 0x00, 0x04, 0x67, 0x64, 0x00,
                0x1f, 0x01, 0x00, 0x04, 0x68, 0xee, 0x3c, 0x80});
}
// AVC keyframe: one 4-byte-length-prefixed IDR NALU, padded to `size` bytes of NALU payload.
inline BufferRef avc_keyframe(size_t size = 5, int32_t cts = 0) {
  std::vector<uint8_t> v{0x17, 0x01, uint8_t(cts >> 16), uint8_t(cts >> 8), uint8_t(cts)};
  const uint32_t n = static_cast<uint32_t>(size);
  v.insert(v.end(), {uint8_t(n >> 24), uint8_t(n >> 16), uint8_t(n >> 8), uint8_t(n)});
  v.push_back(0x65);
  v.resize(v.size() + size - 1, 0x88);
  return bytes(v);
}
inline BufferRef avc_inter(size_t size = 4, int32_t cts = 0) {
  std::vector<uint8_t> v{0x27, 0x01, uint8_t(cts >> 16), uint8_t(cts >> 8), uint8_t(cts)};
  const uint32_t n = static_cast<uint32_t>(size);
  v.insert(v.end(), {uint8_t(n >> 24), uint8_t(n >> 16), uint8_t(n >> 8), uint8_t(n)});
  v.push_back(0x41);
  v.resize(v.size() + size - 1, 0x9a);
  return bytes(v);
}
inline BufferRef aac_seq_header() { return bytes({0xaf, 0x00, 0x12, 0x10}); }
inline BufferRef aac_raw(size_t size = 6) {
  std::vector<uint8_t> v{0xaf, 0x01};
  v.resize(2 + size, 0x21);
  return bytes(v);
}
// "onMetaData" {width, height}, optionally preceded by "@setDataFrame".
inline BufferRef on_metadata(bool set_data_frame, double width = 1280) {
  std::vector<uint8_t> v;
  protocol::Amf0Encoder enc(v);
  if (set_data_frame) enc.write_string("@setDataFrame");
  enc.write_string("onMetaData");
  enc.begin_ecma_array(2);
  enc.write_key("width");
  enc.write_number(width);
  enc.write_key("height");
  enc.write_number(720);
  enc.end_object();
  return bytes(v);
}
inline std::vector<uint8_t> vec(const BufferRef& b) { return {b.data(), b.data() + b.size()}; }

// A frame of a tag body with the facts of its header, as Stream::publish makes it; nullptr for a
// header that does not parse (publish drops those, counted in frames_dropped).
inline FramePtr tag_frame(MediaType t, uint32_t ts, BufferRef body) {
  auto f = std::make_shared<MediaFrame>();
  f->type = t;
  f->timestamp = ts;
  try {
    if (t == MediaType::Video) set_tag_facts(*f, protocol::parse_video_tag(body.span()));
    if (t == MediaType::Audio) set_tag_facts(*f, protocol::parse_audio_tag(body.span()));
  } catch (const protocol::ProtocolError&) {
    return nullptr;
  }
  f->metadata = t == MediaType::Data && protocol::is_metadata(body.span());
  f->payload = std::move(body);
  return f;
}

// A frame as the Stream would build it (for GopCache / OutputQueue tests).
enum class Kind { Meta, VideoHeader, AudioHeader, Key, Inter, Audio };
inline FramePtr frame(Kind k, uint32_t ts, size_t size = 10) {
  auto f = std::make_shared<MediaFrame>();
  f->timestamp = ts;
  switch (k) {
    case Kind::Meta: f->type = MediaType::Data; f->metadata = true; f->payload = on_metadata(false); break;
    case Kind::VideoHeader: f->type = MediaType::Video; f->sequence_header = f->keyframe = true; f->payload = avc_seq_header(); break;
    case Kind::AudioHeader: f->type = MediaType::Audio; f->sequence_header = true; f->payload = aac_seq_header(); break;
    case Kind::Key: f->type = MediaType::Video; f->keyframe = true; f->payload = avc_keyframe(size); break;
    case Kind::Inter: f->type = MediaType::Video; f->payload = avc_inter(size); break;
    case Kind::Audio: f->type = MediaType::Audio; f->payload = aac_raw(size); break;
  }
  return f;
}

}  // namespace rill::media::testutil
