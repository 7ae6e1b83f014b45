// RecordingIndex: files made here with the recorder's writers (Fmp4Muxer, FlvFileWriter) read
// back whole, byte by byte, cut short and corrupted.
#include "rill/protocol/recording_index.h"

#include <gtest/gtest.h>

#include <vector>

#include "codec_test_data.h"
#include "rill/protocol/error.h"
#include "rill/protocol/flv_file_writer.h"
#include "rill/protocol/fmp4_muxer.h"

using namespace rill::protocol;
using namespace rill::testdata;
using Bytes = std::vector<uint8_t>;

namespace {

const Bytes kIdr = {0, 0, 0, 2, 0x65, 0x88};
const Bytes kP = {0, 0, 0, 2, 0x41, 0x9a};
const Bytes kAac = {0x21, 0x10, 0x05};

struct Fmp4File {
  Bytes bytes;
  std::vector<size_t> fragment_ends;
};

// Three fragments of 1 s: video at 25 fps (a keyframe first in the 1st and 3rd), audio at ~43 Hz.
Fmp4File make_fmp4() {
  Fmp4Tracks t;
  t.has_video = true;
  t.video_record = kAvcRecord;
  t.has_audio = true;
  t.audio_asc = kAsc;
  Fmp4Muxer mux(t);
  Fmp4File f;
  f.bytes = mux.init_segment();
  for (int frag = 0; frag < 3; ++frag) {
    for (int i = 0; i < 25; ++i) {
      const int64_t ms = frag * 1000 + i * 40;
      mux.add({true, ms, 0, i == 0 && frag != 1, i == 0 && frag != 1 ? kIdr : kP});
    }
    for (int64_t ms = frag * 1000; ms < (frag + 1) * 1000; ms += 23) mux.add({false, ms, 0, false, kAac});
    mux.flush((frag + 1) * 1000, f.bytes);
    f.fragment_ends.push_back(f.bytes.size());
  }
  return f;
}

Bytes video_body(bool key) { return Bytes{static_cast<uint8_t>(key ? 0x17 : 0x27), 1, 0, 0, 0, 0xAB, 0xCD}; }
Bytes avc_header() { return Bytes{0x17, 0, 0, 0, 0, 1, 2, 3}; }
Bytes aac_header() { return Bytes{0xAF, 0, 0x12, 0x10}; }
Bytes aac_frame() { return Bytes{0xAF, 1, 0x21, 0x10}; }

// An FLV as the recorder writes it, not closed: onMetaData (duration 0), headers, 2 s of frames.
Bytes make_flv(FlvFileWriter& w) {
  Bytes out;
  w.begin(out);
  w.write_tag(9, 0, avc_header(), false, out);
  w.write_tag(8, 0, aac_header(), false, out);
  for (uint32_t ms = 0; ms < 2000; ms += 40) {
    w.write_tag(9, ms, video_body(ms % 1000 == 0), ms % 1000 == 0, out);
    w.write_tag(8, ms, aac_frame(), false, out);
  }
  return out;
}

FlvFileWriterOptions av_options() {
  FlvFileWriterOptions o;
  o.has_audio = o.has_video = true;
  return o;
}

}  // namespace

TEST(RecordingIndex, Fmp4FragmentsTimesAndKeyframes) {
  const Fmp4File f = make_fmp4();
  RecordingIndex ix;
  ix.feed(f.bytes);
  EXPECT_EQ(ix.format(), RecordingFormat::Fmp4);
  ASSERT_EQ(ix.tracks().size(), 2u);
  EXPECT_TRUE(ix.tracks()[0].video);
  EXPECT_EQ(ix.tracks()[0].timescale, 90000u);
  EXPECT_TRUE(ix.tracks()[1].audio);
  EXPECT_EQ(ix.tracks()[1].timescale, 44100u);
  EXPECT_EQ(ix.init_offset(), 0u);
  ASSERT_EQ(ix.fragments().size(), 3u);
  size_t begin = ix.init_size();
  for (size_t i = 0; i < 3; ++i) {
    const Fmp4Fragment& fr = ix.fragments()[i];
    EXPECT_EQ(fr.offset, begin) << i;
    EXPECT_EQ(fr.offset + fr.size, f.fragment_ends[i]) << i;
    EXPECT_EQ(fr.sequence, i + 1);
    EXPECT_EQ(fr.keyframe, i != 1) << i;
    EXPECT_DOUBLE_EQ(fr.start_seconds, static_cast<double>(i));
    EXPECT_DOUBLE_EQ(fr.duration_seconds, 1.0);
    ASSERT_EQ(fr.tracks.size(), 2u);
    EXPECT_EQ(fr.tracks[0].base_decode_time, i * 90000u);
    EXPECT_EQ(fr.tracks[0].duration, 90000u);
    EXPECT_EQ(fr.tracks[0].samples, 25u);
    EXPECT_EQ(fr.samples, 25u + fr.tracks[1].samples);
    begin = f.fragment_ends[i];
  }
  EXPECT_EQ(ix.complete_end(), f.bytes.size());
  EXPECT_TRUE(ix.playable());
  EXPECT_NEAR(ix.duration_seconds(), 3.0, 1e-9);
}

TEST(RecordingIndex, PiecesOfAnySizeGiveTheSameIndex) {
  const Fmp4File f = make_fmp4();
  for (size_t piece : {1u, 7u, 4096u}) {
    RecordingIndex ix;
    for (size_t at = 0; at < f.bytes.size(); at += piece)
      ix.feed(std::span<const uint8_t>(f.bytes).subspan(at, std::min(piece, f.bytes.size() - at)));
    ASSERT_EQ(ix.fragments().size(), 3u) << piece;
    EXPECT_EQ(ix.complete_end(), f.bytes.size());
  }
}

TEST(RecordingIndex, CutShortEndsAtTheLastWholeFragment) {
  const Fmp4File f = make_fmp4();
  RecordingIndex ix;
  ix.feed(std::span<const uint8_t>(f.bytes).first(f.fragment_ends[1] + 100));
  EXPECT_EQ(ix.fragments().size(), 2u);
  EXPECT_EQ(ix.complete_end(), f.fragment_ends[1]);

  RecordingIndex init_only;
  init_only.feed(std::span<const uint8_t>(f.bytes).first(f.fragment_ends[0] - 1));
  EXPECT_FALSE(init_only.playable());
  EXPECT_EQ(init_only.complete_end(), init_only.init_size());
}

TEST(RecordingIndex, CorruptBoxSizeNamesTheOffset) {
  Fmp4File f = make_fmp4();
  const size_t at = f.fragment_ends[0];  // the second moof's size
  f.bytes[at] = 0xFF;
  RecordingIndex ix;
  try {
    ix.feed(f.bytes);
    FAIL() << "no error";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("at offset"), std::string::npos) << e.what();
  }
  // What came before stays readable; a second feed says the same.
  EXPECT_EQ(ix.complete_end(), f.fragment_ends[0]);
  EXPECT_THROW(ix.feed(f.bytes), ProtocolError);
}

TEST(RecordingIndex, BoundsOnBoxSizesAndEntries) {
  const Fmp4File f = make_fmp4();
  RecordingIndexLimits small;
  small.max_box_bytes = 64;  // the moov is larger
  RecordingIndex ix(small);
  EXPECT_THROW(ix.feed(f.bytes), ProtocolError);

  RecordingIndexLimits two;
  two.max_entries = 2;
  RecordingIndex ix2(two);
  EXPECT_THROW(ix2.feed(f.bytes), ProtocolError);
  EXPECT_EQ(ix2.fragments().size(), 2u);

  RecordingIndexLimits totals;
  totals.keep_entries = false;
  RecordingIndex ix3(totals);
  ix3.feed(f.bytes);
  EXPECT_TRUE(ix3.fragments().empty());
  EXPECT_EQ(ix3.units(), 3u);
  EXPECT_NEAR(ix3.duration_seconds(), 3.0, 1e-9);
}

TEST(RecordingIndex, NeitherFlvNorMp4) {
  RecordingIndex ix;
  const Bytes junk(16, 'x');
  EXPECT_THROW(ix.feed(junk), ProtocolError);
}

TEST(RecordingIndex, FlvTagsKeyframesAndUnclosedMetadata) {
  FlvFileWriter w(av_options());
  const Bytes file = make_flv(w);
  RecordingIndex ix;
  ix.feed(file);
  EXPECT_EQ(ix.format(), RecordingFormat::Flv);
  EXPECT_EQ(ix.complete_end(), file.size());
  ASSERT_TRUE(ix.metadata_duration());
  EXPECT_EQ(*ix.metadata_duration(), 0.0);  // never closed
  EXPECT_EQ(ix.metadata_offset(), FlvFileWriter::kMetadataOffset);
  ASSERT_EQ(ix.tags().size(), 1u + 2 + 100);
  EXPECT_EQ(ix.tags()[0].type, 18);
  EXPECT_FALSE(ix.tags()[1].keyframe);  // the sequence header
  size_t keys = 0;
  for (const FlvTagEntry& t : ix.tags()) keys += t.keyframe;
  EXPECT_EQ(keys, 2u);
  EXPECT_EQ(ix.media_units(), 100u);
  EXPECT_NEAR(ix.duration_seconds(), w.duration_ms() / 1000.0, 1e-9);
  EXPECT_TRUE(ix.playable());
}

TEST(RecordingIndex, FlvClosedAndCutShort) {
  FlvFileWriter w(av_options());
  Bytes file = make_flv(w);
  const Bytes meta = w.final_metadata();
  std::copy(meta.begin(), meta.end(), file.begin() + FlvFileWriter::kMetadataOffset);
  RecordingIndex closed;
  closed.feed(file);
  ASSERT_TRUE(closed.metadata_duration());
  EXPECT_NEAR(*closed.metadata_duration(), 2.0, 0.05);

  RecordingIndex cut;
  cut.feed(std::span<const uint8_t>(file).first(file.size() - 3));
  EXPECT_EQ(cut.tags().size(), closed.tags().size() - 1);
  EXPECT_EQ(cut.complete_end(), closed.tags().back().offset);

  file[file.size() - 1] ^= 1;  // the last PreviousTagSize
  RecordingIndex bad;
  EXPECT_THROW(bad.feed(file), ProtocolError);
  EXPECT_EQ(bad.complete_end(), closed.tags().back().offset);
}

TEST(RecordingIndex, ACallerMaySeekPastWhatIsSkipped) {
  const Fmp4File f = make_fmp4();
  RecordingIndex ix;
  uint64_t read = 0;
  size_t at = 0;
  while (at < f.bytes.size()) {
    if (const uint64_t n = ix.skippable()) {
      ix.advance(n);
      at += n;
      continue;
    }
    ix.feed(std::span<const uint8_t>(f.bytes).subspan(at, 8));
    at += 8;
    read += 8;
  }
  EXPECT_EQ(ix.fragments().size(), 3u);
  EXPECT_EQ(ix.complete_end(), f.bytes.size());
  EXPECT_FALSE(ix.stray_mdat());
  EXPECT_LT(read, f.bytes.size());
}

TEST(RecordingIndex, EntriesTakenAsTheyComeKeepItBounded) {
  FlvFileWriter w(av_options());
  const Bytes file = make_flv(w);
  RecordingIndexLimits lim;
  lim.max_entries = 16;  // fewer than the file's 103 tags, more than one piece's
  RecordingIndex ix(lim);
  size_t taken = 0;
  for (size_t at = 0; at < file.size(); at += 64) {
    ix.feed(std::span<const uint8_t>(file).subspan(at, std::min<size_t>(64, file.size() - at)));
    taken += ix.take_tags().size();
  }
  EXPECT_EQ(taken, 103u);
  EXPECT_TRUE(ix.tags().empty());
}
