// rill-bench's multitrack source: files paired tag by tag into ManyTracks video tags.
// (flv_source.cpp is compiled into the unit tests by loadgen_test.cpp.)
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "../../src/loadgen/multitrack_source.cpp"
#include "rill/protocol/flv_multitrack.h"

namespace rill::loadgen {
namespace {

using Bytes = std::vector<uint8_t>;

SourceTag tag(uint8_t type, uint32_t ts, Bytes body) {
  SourceTag t;
  t.type = type;
  t.timestamp = ts;
  t.body = SharedBuffer::copy_of(std::span<const uint8_t>(body));
  return t;
}

std::vector<SourceTag> file(uint8_t marker, bool audio) {
  std::vector<SourceTag> f{tag(9, 0, {0x17, 0x00, 0x00, 0x00, 0x00, 0x01, marker}),
                           tag(9, 0, {0x17, 0x01, 0x00, 0x00, 0x00, marker}),
                           tag(9, 40, {0x27, 0x01, 0x00, 0x00, 0x00, marker})};
  if (audio) f.insert(f.begin() + 2, tag(8, 0, {0xAF, 0x01, 0x21}));
  return f;
}

TEST(MultitrackSource, PairsVideoTagsIntoManyTracks) {
  auto src = multitrack_from_tags({file(0xA0, true), file(0xA1, false), file(0xA2, false)});
  ASSERT_EQ(src->preamble().size(), 1u);  // the video SequenceStart
  const protocol::MultitrackTag head = protocol::parse_multitrack_video(src->preamble()[0].body.span());
  EXPECT_EQ(head.type, protocol::AvMultitrackType::ManyTracks);
  EXPECT_EQ(head.packet_type, 0);
  ASSERT_EQ(head.tracks.size(), 3u);
  EXPECT_EQ(head.tracks[2].body.back(), 0xA2);

  ASSERT_EQ(src->media().size(), 3u);  // key, audio (plain), inter
  EXPECT_TRUE(src->media()[0].keyframe);
  EXPECT_EQ(src->media()[1].type, 8);
  const protocol::MultitrackTag inter = protocol::parse_multitrack_video(src->media()[2].body.span());
  EXPECT_EQ(inter.frame_type, 2);
  ASSERT_EQ(inter.tracks.size(), 3u);
  EXPECT_EQ(inter.tracks[1].track_id, 1);
  EXPECT_EQ(Bytes(inter.tracks[1].body.begin(), inter.tracks[1].body.end()), (Bytes{0x00, 0x00, 0x00, 0xA1}));
}

TEST(MultitrackSource, RefusesTracksThatDoNotPair) {
  std::vector<SourceTag> other = file(0xA1, false);
  other[1] = tag(9, 0, {0x17, 0x00, 0x00, 0x00, 0x00, 0x01});  // a header where track 0 has a frame
  EXPECT_THROW(multitrack_from_tags({file(0xA0, false), other}), ProtocolError);
}

}  // namespace
}  // namespace rill::loadgen
