#include "rill/protocol/flv_file_writer.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "rill/protocol/flv_file.h"
#include "rill/protocol/flv_tag.h"

namespace rill::protocol {

namespace {

// The keys the writer sets: a publisher's value for them would be wrong for the file.
constexpr std::string_view kOwnKeys[] = {"duration",
                                         "filesize",
                                         "lasttimestamp",
                                         "lastkeyframetimestamp",
                                         "lastkeyframelocation",
                                         "hasVideo",
                                         "hasAudio",
                                         "hasMetadata",
                                         "hasKeyframes",
                                         "canSeekToEnd",
                                         "keyframes",
                                         "datasize",
                                         "videosize",
                                         "audiosize"};

bool own_key(std::string_view key) {
  return std::find(std::begin(kOwnKeys), std::end(kOwnKeys), key) != std::end(kOwnKeys);
}

size_t track_of(uint8_t type) { return type == kFlvTagVideo ? 1 : 0; }

}  // namespace

FlvFileWriter::FlvFileWriter(FlvFileWriterOptions options) : opt_(std::move(options)) {
  opt_.keyframe_capacity = std::max<size_t>(opt_.keyframe_capacity, 2);
  if (!opt_.source_metadata.has_properties()) opt_.source_metadata = Amf0Value::ecma_array();
  // The room: the final body with every index entry taken (numbers are 9 bytes whatever their value).
  room_ = metadata_body(false, opt_.keyframe_capacity, 0).size();
}

std::vector<uint8_t> FlvFileWriter::metadata_body(bool final_values, size_t entries, size_t room) const {
  std::vector<uint8_t> body;
  Amf0Encoder e(body);
  // FLV E.5 onMetaData: SCRIPTDATA name "onMetaData", value an ECMA array.
  e.write_string("onMetaData");
  e.begin_ecma_array(0);
  for (const Amf0Property& p : opt_.source_metadata.properties()) {
    if (own_key(p.key)) continue;
    e.write_key(p.key);
    e.write_value(p.value);
  }
  const auto number = [&](std::string_view key, double v) {
    e.write_key(key);
    e.write_number(final_values ? v : 0.0);
  };
  number("duration", duration_ms() / 1000.0);
  number("filesize", static_cast<double>(size_));
  number("lasttimestamp", std::max(m_.last_ts[0], m_.last_ts[1]) / 1000.0);
  number("lastkeyframetimestamp", m_.last_key_ts / 1000.0);
  number("lastkeyframelocation", static_cast<double>(m_.last_key_pos));
  e.write_key("hasVideo");
  e.write_bool(opt_.has_video);
  e.write_key("hasAudio");
  e.write_bool(opt_.has_audio);
  e.write_key("hasMetadata");
  e.write_bool(true);
  e.write_key("hasKeyframes");
  e.write_bool(final_values && !times_.empty());
  e.write_key("keyframes");
  e.begin_object();
  const auto array = [&](std::string_view key, const std::vector<double>& values) {
    e.write_key(key);
    e.begin_strict_array(static_cast<uint32_t>(entries));
    for (size_t i = 0; i < entries; ++i) e.write_number(final_values && i < values.size() ? values[i] : 0.0);
  };
  array("times", times_);
  array("filepositions", positions_);
  e.end_object();
  e.end_object();  // the ECMA array
  if (room == 0) return body;
  if (body.size() > room) {
    throw ProtocolError("flv file: onMetaData of " + std::to_string(body.size()) +
                        " bytes exceeds its reserved " + std::to_string(room));
  }
  // Padding after the array: values a reader that wants more than the array skips (ffmpeg reads
  // the name and the array and moves on to the next tag).
  size_t need = room - body.size();
  while (need >= 3) {
    const size_t n = std::min<size_t>(need - 3, 0xFFFF);
    e.write_string(std::string(n, ' '));
    need -= 3 + n;
  }
  for (; need > 0; --need) e.write_null();
  return body;
}

void FlvFileWriter::begin(std::vector<uint8_t>& out) {
  const auto header = flv_file_header(opt_.has_audio, opt_.has_video);
  out.insert(out.end(), header.begin(), header.end());
  size_ = header.size();
  const std::vector<uint8_t> body = metadata_body(false, 0, room_);
  const size_t at = out.size();
  out.resize(at + flv_tag_size(body.size()));
  size_ += serialize_flv_tag_into(out.data() + at, kFlvTagScript, 0, body);
}

void FlvFileWriter::write_tag(uint8_t type, uint32_t timestamp_ms, std::span<const uint8_t> body,
                              bool keyframe, std::vector<uint8_t>& out) {
  const size_t at = out.size();
  out.resize(at + flv_tag_size(body.size()));
  try {
    serialize_flv_tag_into(out.data() + at, type, timestamp_ms, body);
  } catch (const ProtocolError&) {
    out.resize(at);
    throw;
  }
  const uint64_t position = size_;
  size_ += flv_tag_size(body.size());
  if (type != kFlvTagAudio && type != kFlvTagVideo) return;
  const size_t t = track_of(type);
  if (m_.seen[t] && timestamp_ms > m_.last_ts[t]) m_.last_delta[t] = timestamp_ms - m_.last_ts[t];
  m_.last_ts[t] = timestamp_ms;
  m_.seen[t] = true;
  if (type != kFlvTagVideo || !keyframe) return;
  m_.last_key_ts = timestamp_ms;
  m_.last_key_pos = position;
  if (m_.keyframes_seen % stride_ == 0) {
    if (times_.size() == opt_.keyframe_capacity) {
      // Full: keep every other entry, index every other keyframe from now on.
      size_t kept = 0;
      for (size_t i = 0; i < times_.size(); i += 2, ++kept) {
        times_[kept] = times_[i];
        positions_[kept] = positions_[i];
      }
      times_.resize(kept);
      positions_.resize(kept);
      stride_ *= 2;
    }
    if (m_.keyframes_seen % stride_ == 0) {
      times_.push_back(timestamp_ms / 1000.0);
      positions_.push_back(static_cast<double>(position));
    }
  }
  ++m_.keyframes_seen;
}

uint32_t FlvFileWriter::duration_ms() const {
  uint32_t d = 0;
  for (size_t t = 0; t < 2; ++t) {
    if (m_.seen[t]) d = std::max(d, m_.last_ts[t] + m_.last_delta[t]);
  }
  return d;
}

std::vector<uint8_t> FlvFileWriter::final_metadata() const {
  const std::vector<uint8_t> body = metadata_body(true, times_.size(), room_);
  std::vector<uint8_t> tag(flv_tag_size(body.size()));
  serialize_flv_tag_into(tag.data(), kFlvTagScript, 0, body);
  return tag;
}

FlvFileWriter::Mark FlvFileWriter::mark() const {
  Mark m = m_;
  m.size = size_;
  return m;
}

void FlvFileWriter::rollback(const Mark& m) {
  m_ = m;
  size_ = m.size;
  while (!positions_.empty() && positions_.back() >= static_cast<double>(m.size)) {
    positions_.pop_back();
    times_.pop_back();
  }
}

}  // namespace rill::protocol
