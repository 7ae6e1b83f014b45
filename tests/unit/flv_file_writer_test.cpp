// FlvFileWriter: the bytes of a recorded FLV file, its onMetaData rewritten at close (duration,
// filesize, the keyframes index) and read back with the project's FLV and AMF0 readers.
#include "rill/protocol/flv_file_writer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "rill/protocol/flv_file.h"
#include "rill/protocol/flv_tag.h"

using namespace rill::protocol;
using Bytes = std::vector<uint8_t>;

namespace {

// An AVC video tag body: keyframe or inter frame, a NALU of `n` bytes.
Bytes video_body(bool key, size_t n = 100) {
  Bytes b(5 + n, 0xAB);  // (built whole: GCC 12 -Warray-bounds misreads a resize of a 5-byte list)
  b[0] = key ? 0x17 : 0x27;
  b[1] = 1;
  b[2] = b[3] = b[4] = 0;
  return b;
}
Bytes audio_body() { return Bytes{0xAF, 1, 0x21, 0x10, 0x04}; }

// Every tag of a whole file, read with the project's reader (which checks PreviousTagSize).
std::vector<FlvTag> read_all(const Bytes& file) {
  FlvFileReader r;
  r.feed(file);
  std::vector<FlvTag> tags;
  while (auto t = r.next()) tags.push_back(std::move(*t));
  EXPECT_EQ(r.buffered(), 0u);
  return tags;
}

// The onMetaData array of a script tag body.
Amf0Value metadata_of(const FlvTag& tag) {
  EXPECT_EQ(tag.type, kFlvTagScript);
  Amf0Decoder d(tag.body);
  EXPECT_EQ(d.decode().as_string(), "onMetaData");
  Amf0Value v = d.decode();
  EXPECT_TRUE(v.is_ecma_array());
  // What follows is padding only: strings of spaces and nulls.
  while (!d.at_end()) {
    const Amf0Value pad = d.decode();
    EXPECT_TRUE(pad.is_null() ||
                (pad.is_string() && pad.as_string().find_first_not_of(' ') == std::string::npos));
  }
  return v;
}

std::vector<double> numbers(const Amf0Value& array) {
  std::vector<double> out;
  for (const Amf0Value& v : array.items()) out.push_back(v.as_number());
  return out;
}

struct Recording {
  FlvFileWriter w;
  Bytes file;
  std::vector<uint64_t> keyframe_positions;
  size_t first_tag = 0;  // the onMetaData tag begin() wrote
  explicit Recording(FlvFileWriterOptions o) : w(std::move(o)) {
    w.begin(file);
    first_tag = file.size() - FlvFileWriter::kMetadataOffset;
  }
  void video(uint32_t ts, bool key, size_t n = 100) {
    if (key) keyframe_positions.push_back(file.size());
    w.write_tag(kFlvTagVideo, ts, video_body(key, n), key, file);
    EXPECT_EQ(w.size(), file.size());
  }
  void audio(uint32_t ts) { w.write_tag(kFlvTagAudio, ts, audio_body(), false, file); }
  // Close: the final metadata over the first, in place.
  Bytes closed() const {
    Bytes f = file;
    const Bytes meta = w.final_metadata();
    EXPECT_LE(FlvFileWriter::kMetadataOffset + meta.size(), f.size());
    std::memcpy(f.data() + FlvFileWriter::kMetadataOffset, meta.data(), meta.size());
    return f;
  }
};

FlvFileWriterOptions av(size_t capacity = 64) {
  FlvFileWriterOptions o;
  o.has_audio = o.has_video = true;
  o.keyframe_capacity = capacity;
  return o;
}

TEST(FlvFileWriter, FirstMetadataHasRoomAndNoValues) {
  Recording r(av());
  ASSERT_GE(r.file.size(), 13u);
  EXPECT_EQ(Bytes(r.file.begin(), r.file.begin() + 13), (Bytes{'F', 'L', 'V', 1, 5, 0, 0, 0, 9, 0, 0, 0, 0}));
  const auto tags = read_all(r.file);
  ASSERT_EQ(tags.size(), 1u);
  const Amf0Value m = metadata_of(tags[0]);
  EXPECT_EQ(m.find_number("duration"), 0.0);
  EXPECT_EQ(m.find("keyframes")->find("times")->items().size(), 0u);
  // Room for 64 entries of two 9-byte numbers.
  EXPECT_GT(tags[0].body.size(), 64u * 18);
}

TEST(FlvFileWriter, CloseRewritesDurationSizeAndIndexInPlace) {
  FlvFileWriterOptions o = av();
  o.source_metadata = Amf0Value::ecma_array();
  o.source_metadata.set("width", Amf0Value::number(640));
  o.source_metadata.set("duration", Amf0Value::number(999));  // the publisher's: replaced
  Recording r(std::move(o));
  const size_t first_size = r.file.size();
  for (uint32_t i = 0; i < 100; ++i) {  // 25 fps, a keyframe every 25 frames; audio every 23 ms
    r.video(i * 40, i % 25 == 0);
    r.audio(i * 40 + 10);
  }
  const Bytes f = r.closed();
  EXPECT_EQ(f.size(), r.file.size());
  EXPECT_GT(f.size(), first_size);
  const auto tags = read_all(f);  // PreviousTagSize of the rewritten tag still right
  ASSERT_EQ(tags.size(), 201u);
  const Amf0Value m = metadata_of(tags[0]);
  EXPECT_EQ(m.find_number("width"), 640.0);
  EXPECT_EQ(m.find_number("duration"), 4.01);  // the last audio tag, at 3970 ms, + 40 ms
  EXPECT_EQ(m.find_number("filesize"), static_cast<double>(f.size()));
  EXPECT_EQ(m.find_bool("hasKeyframes"), true);
  EXPECT_EQ(m.find_number("lastkeyframetimestamp"), 3.0);
  const Amf0Value* kf = m.find("keyframes");
  ASSERT_NE(kf, nullptr);
  EXPECT_EQ(numbers(*kf->find("times")), (std::vector<double>{0, 1, 2, 3}));
  const std::vector<double> pos = numbers(*kf->find("filepositions"));
  ASSERT_EQ(pos.size(), 4u);
  for (size_t i = 0; i < pos.size(); ++i) {
    EXPECT_EQ(pos[i], static_cast<double>(r.keyframe_positions[i]));
    const auto p = static_cast<size_t>(pos[i]);
    EXPECT_EQ(f[p], kFlvTagVideo);  // a tag starts there...
    EXPECT_EQ(f[p + 11] >> 4, 1);   // ...with a keyframe (FrameType 1)
  }
  EXPECT_EQ(m.find_number("lastkeyframelocation"), pos.back());
  // Duplicated "duration" would mislead readers that take the first: there is one.
  size_t durations = 0;
  for (const Amf0Property& p : m.properties()) durations += p.key == "duration";
  EXPECT_EQ(durations, 1u);
}

TEST(FlvFileWriter, IndexThinsOutPastItsRoom) {
  Recording r(av(4));
  for (uint32_t i = 0; i < 10; ++i) r.video(i * 1000, true);  // 10 keyframes, room for 4
  EXPECT_LE(r.w.indexed_keyframes(), 4u);
  EXPECT_EQ(r.w.index_stride(), 4u);
  const Bytes f = r.closed();
  const Amf0Value m = metadata_of(read_all(f)[0]);
  const auto times = numbers(*m.find("keyframes")->find("times"));
  // Every 4th keyframe: still spanning the file.
  EXPECT_EQ(times, (std::vector<double>{0, 4, 8}));
  const auto pos = numbers(*m.find("keyframes")->find("filepositions"));
  EXPECT_EQ(pos, (std::vector<double>{static_cast<double>(r.keyframe_positions[0]),
                                      static_cast<double>(r.keyframe_positions[4]),
                                      static_cast<double>(r.keyframe_positions[8])}));
  EXPECT_EQ(m.find_number("duration"), 10.0);
}

TEST(FlvFileWriter, PaddingFitsEveryShortfall) {
  // Whatever the index holds, the final tag is exactly as long as the reserved one.
  for (uint32_t n = 0; n <= 9; ++n) {
    Recording r(av(8));
    for (uint32_t i = 0; i < n; ++i) r.video(i * 500, true, 10 + i);
    EXPECT_EQ(r.w.final_metadata().size(), r.first_tag);
    const Bytes f = r.closed();
    EXPECT_EQ(read_all(f).size(), n + 1);
  }
}

TEST(FlvFileWriter, RollbackForgetsTagsTheFileNeverGot) {
  Recording r(av());
  r.video(0, true);
  r.audio(10);
  const auto mark = r.w.mark();
  const size_t kept = r.file.size();
  r.video(1000, true);
  r.video(1040, false);
  r.w.rollback(mark);
  r.file.resize(kept);
  r.keyframe_positions.resize(1);
  const Bytes f = r.closed();
  const Amf0Value m = metadata_of(read_all(f)[0]);
  EXPECT_EQ(m.find_number("filesize"), static_cast<double>(kept));
  EXPECT_EQ(numbers(*m.find("keyframes")->find("times")), (std::vector<double>{0}));
  EXPECT_EQ(m.find_number("duration"), 0.01);  // audio at 10 ms, no interval known
}

TEST(FlvFileWriter, AudioOnlyFile) {
  FlvFileWriterOptions o;
  o.has_audio = true;
  Recording r(std::move(o));
  for (uint32_t i = 0; i < 10; ++i) r.audio(i * 23);
  const Bytes f = r.closed();
  EXPECT_EQ(f[4], 0x04);
  const Amf0Value m = metadata_of(read_all(f)[0]);
  EXPECT_EQ(m.find_bool("hasVideo"), false);
  EXPECT_EQ(m.find_bool("hasKeyframes"), false);
  EXPECT_DOUBLE_EQ(*m.find_number("duration"), 0.23);
}

}  // namespace
