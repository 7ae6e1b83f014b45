// RecordingIndex, its FLV half (FLV 10.1 Annex E): the header, then each tag and its
// PreviousTagSize (protocol/recording_index.h).
#include <string>

#include "rill/core/byte_order.h"
#include "rill/protocol/amf0.h"
#include "rill/protocol/error.h"
#include "rill/protocol/recording_index.h"

namespace rill::protocol {

namespace {
constexpr uint32_t kMaxFlvDataOffset = 1u << 20;
}  // namespace

void RecordingIndex::step_flv_header() {
  if (buf_[3] != 1) fail(3, "FLV version 1, found " + std::to_string(buf_[3]));
  const uint32_t data_offset = load_be32(&buf_[5]);
  if (data_offset < 9 || data_offset > kMaxFlvDataOffset)
    fail(5, "a DataOffset of 9 to " + std::to_string(kMaxFlvDataOffset) + ", found " +
                std::to_string(data_offset));
  // The rest of the header, then PreviousTagSize0 (E.3).
  skip(data_offset - 9 + 4, AfterSkip::FlvTagHeader);
}

void RecordingIndex::step_flv_tag_header() {
  unit_start_ = pos_ - 11;
  tag_type_ = buf_[0] & 0x1F;  // E.4.1: the top bits are Reserved and Filter
  if (tag_type_ != 8 && tag_type_ != 9 && tag_type_ != 18)
    fail(unit_start_, "an FLV tag of type 8, 9 or 18, found " + std::to_string(buf_[0]));
  tag_body_ = load_be24(&buf_[1]);
  tag_ts_ = load_be24(&buf_[4]) | uint32_t(buf_[7]) << 24;
  tag_head_[0] = tag_head_[1] = 0;
  // A script tag is read whole (for onMetaData), a frame only for its first two bytes.
  const bool whole = tag_type_ == 18 && metadata_size_ == 0 && tag_body_ <= lim_.max_box_bytes;
  expect(State::FlvTagBody, whole ? tag_body_ : std::min<uint32_t>(tag_body_, 2));
  if (want_ == 0) step_flv_tag_body();
}

void RecordingIndex::step_flv_tag_body() {
  if (!buf_.empty()) tag_head_[0] = buf_[0];
  if (buf_.size() > 1) tag_head_[1] = buf_[1];
  if (tag_type_ == 18 && metadata_size_ == 0 && buf_.size() == tag_body_) {
    try {
      Amf0Decoder d(buf_);
      const Amf0Value name = d.decode();
      if (name.type() == Amf0Value::Type::String && name.as_string() == "onMetaData") {
        metadata_offset_ = unit_start_;
        metadata_size_ = static_cast<uint32_t>(11 + tag_body_ + 4);
        metadata_duration_ = d.decode().find_number("duration");
      }
    } catch (const ProtocolError&) {
      // A script tag that does not decode is listed, not read.
    }
  }
  skip(tag_body_ - buf_.size(), AfterSkip::FlvPrevSize);
}

void RecordingIndex::flv_tag_done() {
  const uint32_t prev = load_be32(&buf_[0]);
  if (prev != 11 + tag_body_)
    fail(pos_ - 4, "PreviousTagSize " + std::to_string(11 + tag_body_) + ", found " + std::to_string(prev));
  FlvTagEntry e{unit_start_, 11 + tag_body_ + 4, tag_type_, tag_ts_, false};
  bool header = false;  // a sequence header or end of sequence, not a frame
  if (tag_type_ == 9 && tag_body_ > 0) {
    const uint8_t b = tag_head_[0];
    if (b & 0x80) {  // enhanced RTMP: IsExHeader, FrameType in bits 4-6, PacketType below
      const uint8_t packet = b & 0x0F;
      header = packet == 0 || packet == 2 || packet == 5;
      e.keyframe = ((b >> 4) & 7) == 1 && !header;
    } else {
      const uint8_t codec = b & 0x0F;  // E.4.3.1: AVC 7, HEVC 12 carry an AVCPacketType
      header = (codec == 7 || codec == 12) && tag_body_ >= 2 && tag_head_[1] != 1;
      e.keyframe = (b >> 4) == 1 && !header;
    }
  } else if (tag_type_ == 8 && tag_body_ > 0) {
    header =
        (tag_head_[0] >> 4) == 10 && tag_body_ >= 2 && tag_head_[1] == 0;  // E.4.2.1: AAC sequence header
  }
  ++units_;
  if ((tag_type_ == 8 || tag_type_ == 9) && tag_body_ > 0 && !header) ++media_units_;
  if (tag_type_ == 8 || tag_type_ == 9) note_time(tag_type_, 1000, tag_ts_, 0, false);
  keep(tags_, e);
  complete_end_ = pos_;
  expect(State::FlvTagHeader, 11);
}

}  // namespace rill::protocol
