// RTMP chunk stream (spec 5.3): writer->reader round trips, hand-built chunks, limits, the reader's
// header-only mode, aggregates.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "rill/protocol/chunk_reader.h"
#include "rill/protocol/chunk_writer.h"
#include "rill/protocol/error.h"
#include "rill/protocol/rtmp_message.h"

using namespace rill;
using namespace rill::protocol;

namespace {

using Bytes = std::vector<uint8_t>;

Bytes to_bytes(const BufferRef& b) { return Bytes(b.data(), b.data() + b.size()); }

Bytes pattern(size_t n, uint32_t seed) {
  Bytes b(n);
  std::mt19937 rng(seed);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

// Collects what a reader delivers.
struct Sink {
  std::vector<RtmpMessage> msgs;
  ChunkReader reader;
  explicit Sink(ChunkReaderLimits l = {})
      : reader([this](RtmpMessage&& m) { msgs.push_back(std::move(m)); }, l) {}
  void feed(const Bytes& b) { EXPECT_EQ(reader.feed(b), b.size()); }
  void feed_pieces(const Bytes& b, std::mt19937& rng, size_t max_piece) {
    for (size_t pos = 0, n = 0; pos < b.size(); pos += n) {
      n = std::min(b.size() - pos, size_t(rng() % max_piece) + 1);
      reader.feed(std::span<const uint8_t>(b.data() + pos, n));
    }
  }
};

// Hand-built chunk bytes.
struct Chunks {
  Bytes b;
  Chunks& basic(uint8_t fmt, uint32_t csid) {
    if (csid < 64) return u8(uint8_t(fmt << 6 | csid));
    if (csid < 320) return u8(uint8_t(fmt << 6)).u8(uint8_t(csid - 64));
    return u8(uint8_t(fmt << 6 | 1)).u8(uint8_t((csid - 64) & 0xFF)).u8(uint8_t((csid - 64) >> 8));
  }
  Chunks& u8(uint8_t v) { b.push_back(v); return *this; }
  Chunks& be24(uint32_t v) { return u8(v >> 16).u8(v >> 8).u8(v); }
  Chunks& be32(uint32_t v) { return u8(v >> 24).u8(v >> 16).u8(v >> 8).u8(v); }
  Chunks& le32(uint32_t v) { return u8(v).u8(v >> 8).u8(v >> 16).u8(v >> 24); }
  Chunks& data(const Bytes& d, size_t off, size_t n) {
    b.insert(b.end(), d.begin() + off, d.begin() + off + n);
    return *this;
  }
  // A timestamp/delta field, with the extended field when it does not fit in 24 bits.
  Chunks& ts(uint32_t v) { return v >= 0xFFFFFF ? be24(0xFFFFFF) : be24(v); }
  Chunks& ext(uint32_t v) { return v >= 0xFFFFFF ? be32(v) : *this; }
  Chunks& fmt0(uint32_t csid, uint32_t t, uint32_t len, uint8_t type, uint32_t sid) {
    return basic(0, csid).ts(t).be24(len).u8(type).le32(sid).ext(t);
  }
  Chunks& fmt1(uint32_t csid, uint32_t delta, uint32_t len, uint8_t type) {
    return basic(1, csid).ts(delta).be24(len).u8(type).ext(delta);
  }
  Chunks& fmt2(uint32_t csid, uint32_t delta) { return basic(2, csid).ts(delta).ext(delta); }
  Chunks& fmt3(uint32_t csid) { return basic(3, csid); }
};

Bytes serialize(uint8_t type, uint32_t sid, uint32_t ts, uint32_t csid, const Bytes& payload,
                uint32_t chunk_size) {
  RtmpMessage m{type, sid, ts, csid, SharedBuffer::copy_of(payload)};
  BufferRef out = ChunkWriter::serialize(m, chunk_size);
  EXPECT_EQ(out->size(), out->capacity());
  EXPECT_EQ(out->size(), ChunkWriter::serialized_size(payload.size(), chunk_size, csid, ts));
  return to_bytes(out);
}

Bytes set_chunk_size_msg(uint32_t size, uint32_t current_chunk_size = 128) {
  return to_bytes(ChunkWriter::serialize(
      control_message(msg_type::SetChunkSize, set_chunk_size_payload(size)), current_chunk_size));
}

void expect_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected ProtocolError containing '" << needle << "'";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace

// ---- writer -> reader round trips ----

TEST(ChunkStream, RoundTripMatrix) {
  std::mt19937 rng(12345);
  const uint32_t chunk_sizes[] = {128, 4096, 60000, uint32_t(rng() % 65536) + 1};
  const uint32_t csids[] = {2, 63, 64, 319, 320, 65599};
  const uint32_t timestamps[] = {1000, 0xFFFFFE, 0xFFFFFF, 0x12345678};
  for (uint32_t cs : chunk_sizes) {
    Sink sink;
    Bytes wire = set_chunk_size_msg(cs);
    struct Want { uint32_t csid, ts; Bytes payload; };
    std::vector<Want> want;
    for (uint32_t csid : csids) {
      for (uint32_t ts : timestamps) {
        for (size_t len : {size_t(0), size_t(1), size_t(cs), size_t(cs) + 1,
                           size_t(rng() % 200001)}) {
          if (len > 200000) len = 200000;
          Bytes p = pattern(len, rng());
          Bytes w = serialize(msg_type::Video, 1, ts, csid, p, cs);
          wire.insert(wire.end(), w.begin(), w.end());
          want.push_back({csid, ts, std::move(p)});
        }
      }
    }
    sink.feed_pieces(wire, rng, 7000);
    ASSERT_EQ(sink.msgs.size(), want.size() + 1) << "chunk size " << cs;
    EXPECT_EQ(sink.reader.chunk_size(), cs);
    EXPECT_EQ(sink.reader.bytes_received(), wire.size());
    EXPECT_EQ(sink.reader.partial_messages(), 0u);
    EXPECT_EQ(sink.msgs[0].type_id, msg_type::SetChunkSize);
    for (size_t i = 0; i < want.size(); ++i) {
      const RtmpMessage& m = sink.msgs[i + 1];
      EXPECT_EQ(m.type_id, msg_type::Video);
      EXPECT_EQ(m.stream_id, 1u);
      EXPECT_EQ(m.csid, want[i].csid);
      EXPECT_EQ(m.timestamp, want[i].ts);
      ASSERT_TRUE(m.payload);
      EXPECT_EQ(m.payload->capacity(), want[i].payload.size());  // allocated once, exact
      EXPECT_EQ(to_bytes(m.payload), want[i].payload) << "cs " << cs << " msg " << i;
    }
  }
}

TEST(ChunkStream, RoundTripOneByteAtATime) {
  Sink sink;
  Bytes wire = set_chunk_size_msg(100);
  Bytes p = pattern(1000, 1);
  Bytes w = serialize(msg_type::Audio, 3, 0x12345678, 320, p, 100);
  wire.insert(wire.end(), w.begin(), w.end());
  for (uint8_t b : wire) sink.reader.feed(std::span<const uint8_t>(&b, 1));
  ASSERT_EQ(sink.msgs.size(), 2u);
  EXPECT_EQ(to_bytes(sink.msgs[1].payload), p);
  EXPECT_EQ(sink.msgs[1].timestamp, 0x12345678u);
}

// ---- writer byte layout ----

TEST(ChunkWriter, BasicHeaderForms) {
  struct Case { uint32_t csid; Bytes head; };
  for (const Case& c : {Case{2, {0x02}}, Case{63, {0x3F}}, Case{64, {0x00, 0x00}},
                        Case{319, {0x00, 0xFF}}, Case{320, {0x01, 0x00, 0x01}},
                        Case{65599, {0x01, 0xFF, 0xFF}}}) {
    Bytes w = serialize(msg_type::Audio, 0, 0, c.csid, Bytes(3, 0xAA), 128);
    EXPECT_TRUE(std::equal(c.head.begin(), c.head.end(), w.begin())) << c.csid;
    EXPECT_EQ(w.size(), c.head.size() + 11 + 3);
    EXPECT_EQ(ChunkWriter::basic_header_size(c.csid), c.head.size());
  }
}

TEST(ChunkWriter, ByteExactTwoChunksAndExtendedTimestamp) {
  Bytes p = pattern(6, 2);
  // Chunk size 4: fmt 0 + 4 bytes, fmt 3 + 2 bytes.
  Bytes w = serialize(msg_type::Video, 0x01020304, 0x000A0B0C, 5, p, 4);
  Bytes want = {0x05, 0x0A, 0x0B, 0x0C, 0x00, 0x00, 0x06, 0x09, 0x04, 0x03, 0x02, 0x01,
                p[0], p[1], p[2], p[3], 0xC5, p[4], p[5]};
  EXPECT_EQ(w, want);
  // Extended timestamp: 0xFFFFFF in the field, the 4-byte value after the header and repeated
  // after every Type 3 basic header.
  w = serialize(msg_type::Video, 1, 0x01000000, 5, p, 4);
  want = {0x05, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x06, 0x09, 0x01, 0x00, 0x00, 0x00,
          0x01, 0x00, 0x00, 0x00, p[0], p[1], p[2], p[3],
          0xC5, 0x01, 0x00, 0x00, 0x00, p[4], p[5]};
  EXPECT_EQ(w, want);
}

TEST(ChunkWriter, SerializeIntoBatchesControlMessages) {
  RtmpMessage msgs[] = {
      control_message(msg_type::WindowAckSize, window_ack_size_payload(2500000)),
      control_message(msg_type::SetPeerBandwidth, set_peer_bandwidth_payload(2500000, bw_limit::Dynamic)),
      control_message(msg_type::SetChunkSize, set_chunk_size_payload(60000)),
      control_message(msg_type::UserControl, user_control_payload(uc_event::StreamBegin, 1)),
  };
  size_t total = 0;
  for (auto& m : msgs) total += ChunkWriter::serialized_size(m.payload.size(), 128, m.csid, 0);
  BufferRef buf = SharedBuffer::create(total);
  for (auto& m : msgs) ChunkWriter::serialize_into(*buf, m, 128);
  EXPECT_EQ(buf->size(), total);
  EXPECT_THROW(ChunkWriter::serialize_into(*buf, msgs[0], 128), std::length_error);

  Sink sink;
  sink.feed(to_bytes(buf));
  ASSERT_EQ(sink.msgs.size(), 4u);
  EXPECT_EQ(parse_window_ack_size(sink.msgs[0].payload.span()), 2500000u);
  PeerBandwidth pb = parse_set_peer_bandwidth(sink.msgs[1].payload.span());
  EXPECT_EQ(pb.window, 2500000u);
  EXPECT_EQ(pb.limit_type, bw_limit::Dynamic);
  EXPECT_EQ(sink.reader.chunk_size(), 60000u);
  UserControlEvent ev = parse_user_control(sink.msgs[3].payload.span());
  EXPECT_EQ(ev.event, uc_event::StreamBegin);
  EXPECT_EQ(ev.value1, 1u);
  for (auto& m : sink.msgs) {
    EXPECT_EQ(m.csid, 2u);
    EXPECT_EQ(m.stream_id, 0u);
  }
}

TEST(ChunkWriter, RejectsCallerErrors) {
  RtmpMessage m{msg_type::Audio, 0, 0, 1, SharedBuffer::copy_of(Bytes{1})};
  EXPECT_THROW(ChunkWriter::serialize(m, 128), std::invalid_argument);
  m.csid = 65600;
  EXPECT_THROW(ChunkWriter::serialize(m, 128), std::invalid_argument);
  m.csid = 3;
  EXPECT_THROW(ChunkWriter::serialize(m, 0), std::invalid_argument);
}

// ---- reader: header compression, timestamps ----

TEST(ChunkReader, InterleavedChunkStreams) {
  Bytes a = pattern(300, 3), b = pattern(200, 4);
  Chunks c;
  c.fmt0(4, 10, 300, msg_type::Video, 1).data(a, 0, 128);
  c.fmt0(6, 20, 200, msg_type::Audio, 1).data(b, 0, 128);
  c.fmt3(4).data(a, 128, 128);
  c.fmt3(6).data(b, 128, 72);  // completes b
  c.fmt3(4).data(a, 256, 44);  // completes a
  Sink sink;
  std::mt19937 rng(5);
  sink.feed_pieces(c.b, rng, 50);
  ASSERT_EQ(sink.msgs.size(), 2u);
  EXPECT_EQ(sink.msgs[0].csid, 6u);
  EXPECT_EQ(to_bytes(sink.msgs[0].payload), b);
  EXPECT_EQ(sink.msgs[0].timestamp, 20u);
  EXPECT_EQ(sink.msgs[1].csid, 4u);
  EXPECT_EQ(to_bytes(sink.msgs[1].payload), a);
  EXPECT_EQ(sink.msgs[1].type_id, msg_type::Video);
}

// Chunk streams of each basic header form interleaved: ids below 64 are found by index, the
// others by search; each continuation goes to its own message.
TEST(ChunkReader, InterleavedChunkStreamsOfEveryHeaderForm) {
  const uint32_t csids[] = {63, 64, 2, 320, 3};
  std::vector<Bytes> payloads;
  Chunks c;
  for (size_t i = 0; i < std::size(csids); ++i) {
    payloads.push_back(pattern(200 + 10 * i, static_cast<uint8_t>(i + 1)));
    const auto len = static_cast<uint32_t>(payloads[i].size());
    c.fmt0(csids[i], static_cast<uint32_t>(10 * i), len, msg_type::Video, 1).data(payloads[i], 0, 128);
  }
  for (size_t i = std::size(csids); i-- > 0;)
    c.fmt3(csids[i]).data(payloads[i], 128, payloads[i].size() - 128);
  Sink sink;
  std::mt19937 rng(7);
  sink.feed_pieces(c.b, rng, 40);
  ASSERT_EQ(sink.msgs.size(), std::size(csids));
  for (size_t k = 0; k < sink.msgs.size(); ++k) {
    const size_t i = std::size(csids) - 1 - k;  // completed in reverse order
    EXPECT_EQ(sink.msgs[k].csid, csids[i]);
    EXPECT_EQ(sink.msgs[k].timestamp, 10 * i);
    EXPECT_EQ(to_bytes(sink.msgs[k].payload), payloads[i]);
  }
}

// A small id whose stream comes after 255 others is not indexed: it is found by search.
TEST(ChunkReader, ASmallIdPastTheIndexedStreamsIsFoundBySearch) {
  ChunkReaderLimits l;
  l.max_chunk_streams = 300;
  Chunks c;
  for (uint32_t i = 0; i < 260; ++i) c.fmt0(64 + i, 0, 0, msg_type::Video, 1);  // empty: delivered at once
  const Bytes p = pattern(200, 9);
  c.fmt0(5, 40, 200, msg_type::Audio, 1).data(p, 0, 128);
  c.fmt3(5).data(p, 128, 72);
  Sink sink(l);
  sink.feed(c.b);
  ASSERT_EQ(sink.msgs.size(), 261u);
  EXPECT_EQ(sink.msgs.back().csid, 5u);
  EXPECT_EQ(sink.msgs.back().timestamp, 40u);
  EXPECT_EQ(to_bytes(sink.msgs.back().payload), p);
}

TEST(ChunkReader, DeltaAccumulationFmt123) {
  Bytes p = pattern(3, 6), q = pattern(2, 7);
  Chunks c;
  c.fmt0(5, 1000, 3, msg_type::Audio, 7).data(p, 0, 3);  // ts 1000
  c.fmt1(5, 20, 2, msg_type::Video).data(q, 0, 2);        // ts 1020, len 2, video
  c.fmt2(5, 30).data(q, 0, 2);                             // ts 1050
  c.fmt3(5).data(q, 0, 2);                                 // ts 1080 (same delta)
  c.fmt3(5).data(q, 0, 2);                                 // ts 1110
  Sink sink;
  sink.feed(c.b);
  ASSERT_EQ(sink.msgs.size(), 5u);
  uint32_t want_ts[] = {1000, 1020, 1050, 1080, 1110};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(sink.msgs[i].timestamp, want_ts[i]) << i;
    EXPECT_EQ(sink.msgs[i].stream_id, 7u);
  }
  EXPECT_EQ(sink.msgs[0].type_id, msg_type::Audio);
  EXPECT_EQ(sink.msgs[4].type_id, msg_type::Video);
  EXPECT_EQ(sink.msgs[4].payload.size(), 2u);
}

TEST(ChunkReader, TimestampWrapsAt32Bits) {
  Bytes p = pattern(1, 8);
  Chunks c;
  c.fmt0(3, 0xFFFFFFF0, 1, msg_type::Audio, 1).data(p, 0, 1);
  c.fmt2(3, 0x20).data(p, 0, 1);
  c.fmt1(3, 0xFFFFFFFF, 1, msg_type::Audio).data(p, 0, 1);  // extended delta, -1 mod 2^32
  Sink sink;
  sink.feed(c.b);
  ASSERT_EQ(sink.msgs.size(), 3u);
  EXPECT_EQ(sink.msgs[0].timestamp, 0xFFFFFFF0u);
  EXPECT_EQ(sink.msgs[1].timestamp, 0x10u);
  EXPECT_EQ(sink.msgs[2].timestamp, 0x0Fu);
}

TEST(ChunkReader, Fmt3AfterFmt0UsesTimestampAsDelta) {
  Bytes p = pattern(2, 9);
  Chunks c;
  c.fmt0(3, 40, 2, msg_type::Audio, 1).data(p, 0, 2);
  c.fmt3(3).data(p, 0, 2);
  Sink sink;
  sink.feed(c.b);
  ASSERT_EQ(sink.msgs.size(), 2u);
  EXPECT_EQ(sink.msgs[1].timestamp, 80u);  // spec 5.3.1.2.4
}

TEST(ChunkReader, ExtendedTimestampRepeatedOnFmt3LibrtmpStyle) {
  Bytes a = pattern(300, 10), b = pattern(10, 11);
  Chunks c;
  // fmt 1 with an extended delta; continuation chunks repeat it.
  c.fmt0(4, 100, 1, msg_type::Video, 1).u8(0x17);
  c.fmt1(4, 0x01000000, 300, msg_type::Video).data(a, 0, 128);
  c.fmt3(4).be32(0x01000000).data(a, 128, 128);
  c.fmt3(4).be32(0x01000000).data(a, 256, 44);
  // A new message with a Type 3 header also carries the field (the delta).
  Chunks d;
  d.fmt3(4).be32(0x01000000).data(a, 0, 128);
  d.fmt3(4).be32(0x01000000).data(a, 128, 128);
  d.fmt3(4).be32(0x01000000).data(a, 256, 44);
  // Back to a small delta: no more extended fields.
  d.fmt2(4, 5).data(a, 0, 128).fmt3(4).data(a, 128, 128).fmt3(4).data(a, 256, 44);
  c.b.insert(c.b.end(), d.b.begin(), d.b.end());
  c.fmt0(5, 0, 10, msg_type::Audio, 1).data(b, 0, 10);
  // In pieces (each header assembled bit by bit) and whole (each header read in place).
  for (size_t piece : {size_t(9), c.b.size()}) {
    Sink sink;
    std::mt19937 rng(12);
    sink.feed_pieces(c.b, rng, piece);
    ASSERT_EQ(sink.msgs.size(), 5u) << piece;
    EXPECT_EQ(sink.msgs[1].timestamp, 100u + 0x01000000u);
    EXPECT_EQ(to_bytes(sink.msgs[1].payload), a);
    EXPECT_EQ(sink.msgs[2].timestamp, 100u + 0x02000000u);
    EXPECT_EQ(to_bytes(sink.msgs[2].payload), a);
    EXPECT_EQ(sink.msgs[3].timestamp, 105u + 0x02000000u);
    EXPECT_EQ(to_bytes(sink.msgs[3].payload), a);
    EXPECT_EQ(to_bytes(sink.msgs[4].payload), b);
  }
}

TEST(ChunkReader, ExtendedTimestampNotRepeatedOnContinuation) {
  // A spec-literal sender: continuation chunks carry no extended timestamp. The reader notices
  // that the 4 bytes after the basic header do not repeat it, and takes them as payload.
  Bytes a = pattern(300, 13), b = pattern(130, 14), s = pattern(5, 15);
  a[128] = 0x00;  // make sure the first continuation bytes differ from the timestamp
  b[128] = 0x77;
  Chunks c;
  c.fmt0(4, 0x01000000, 300, msg_type::Video, 1).data(a, 0, 128);
  c.fmt3(4).data(a, 128, 128).fmt3(4).data(a, 256, 44);
  // Last chunk shorter than 4 bytes: 2 payload bytes, then the next chunk's header follows.
  c.fmt0(6, 0x02000000, 130, msg_type::Video, 1).data(b, 0, 128).fmt3(6).data(b, 128, 2);
  c.fmt0(3, 7, 5, msg_type::Audio, 1).data(s, 0, 5);
  for (size_t piece : {size_t(1), size_t(3), c.b.size()}) {
    Sink sink;
    std::mt19937 rng(16);
    sink.feed_pieces(c.b, rng, piece);
    ASSERT_EQ(sink.msgs.size(), 3u) << piece;
    EXPECT_EQ(to_bytes(sink.msgs[0].payload), a);
    EXPECT_EQ(sink.msgs[0].timestamp, 0x01000000u);
    EXPECT_EQ(to_bytes(sink.msgs[1].payload), b);
    EXPECT_EQ(to_bytes(sink.msgs[2].payload), s);
    EXPECT_EQ(sink.msgs[2].timestamp, 7u);
  }
}

TEST(ChunkReader, ZeroLengthMessage) {
  Chunks c;
  c.fmt0(3, 5, 0, msg_type::DataAmf0, 1).fmt3(3);
  Sink sink;
  sink.feed(c.b);
  ASSERT_EQ(sink.msgs.size(), 2u);
  EXPECT_EQ(sink.msgs[0].payload.size(), 0u);
  EXPECT_EQ(sink.msgs[1].timestamp, 10u);
}

TEST(ChunkReader, Fmt1FirstIsAcceptedFmt23FirstIsNot) {
  Chunks ok;
  ok.fmt1(4, 33, 1, msg_type::Audio).u8(0xAF);
  Sink sink;
  sink.feed(ok.b);
  ASSERT_EQ(sink.msgs.size(), 1u);
  EXPECT_EQ(sink.msgs[0].timestamp, 33u);
  EXPECT_EQ(sink.msgs[0].stream_id, 0u);

  for (uint8_t fmt : {2, 3}) {
    Chunks bad;
    bad.basic(fmt, 9).be24(0).u8(0);
    Sink s2;
    expect_error([&] { s2.feed(bad.b); }, "chunk stream 9");
  }
}

TEST(ChunkReader, FullHeaderMidMessage) {
  Bytes a = pattern(200, 17);
  Chunks same;
  same.fmt0(4, 1, 200, msg_type::Video, 1).data(a, 0, 128).fmt0(4, 1, 200, msg_type::Video, 1).data(a, 128, 72);
  Sink sink;
  sink.feed(same.b);
  ASSERT_EQ(sink.msgs.size(), 1u);
  EXPECT_EQ(to_bytes(sink.msgs[0].payload), a);

  Chunks diff;
  diff.fmt0(4, 1, 200, msg_type::Video, 1).data(a, 0, 128).fmt1(4, 1, 100, msg_type::Video);
  Sink s2;
  expect_error([&] { s2.feed(diff.b); }, "announces length 100");
}

// ---- reader: control messages applied by the reader ----

TEST(ChunkReader, SetChunkSizeMidStream) {
  Bytes a = pattern(5000, 18);
  Bytes wire = serialize(msg_type::Video, 1, 0, 6, a, 128);
  Bytes scs = set_chunk_size_msg(4096);
  wire.insert(wire.end(), scs.begin(), scs.end());
  Bytes w2 = serialize(msg_type::Video, 1, 40, 6, a, 4096);
  wire.insert(wire.end(), w2.begin(), w2.end());
  Sink sink;
  std::mt19937 rng(19);
  sink.feed_pieces(wire, rng, 1000);
  ASSERT_EQ(sink.msgs.size(), 3u);
  EXPECT_EQ(sink.msgs[1].type_id, msg_type::SetChunkSize);  // still delivered
  EXPECT_EQ(parse_set_chunk_size(sink.msgs[1].payload.span()), 4096u);
  EXPECT_EQ(to_bytes(sink.msgs[2].payload), a);
  EXPECT_EQ(sink.reader.chunk_size(), 4096u);
}

TEST(ChunkReader, AbortDropsPartialMessage) {
  Bytes a = pattern(300, 20), b = pattern(10, 21);
  Chunks c;
  c.fmt0(4, 1, 300, msg_type::Video, 1).data(a, 0, 128);
  Sink sink;
  sink.feed(c.b);
  EXPECT_EQ(sink.reader.partial_messages(), 1u);
  sink.feed(to_bytes(ChunkWriter::serialize(control_message(msg_type::Abort, abort_payload(4)), 128)));
  EXPECT_EQ(sink.reader.partial_messages(), 0u);
  Chunks d;
  d.fmt0(4, 2, 10, msg_type::Audio, 1).data(b, 0, 10);
  sink.feed(d.b);
  ASSERT_EQ(sink.msgs.size(), 2u);
  EXPECT_EQ(sink.msgs[0].type_id, msg_type::Abort);
  EXPECT_EQ(parse_abort(sink.msgs[0].payload.span()), 4u);
  EXPECT_EQ(to_bytes(sink.msgs[1].payload), b);
  EXPECT_EQ(sink.msgs[1].timestamp, 2u);
}

TEST(ChunkReader, BadSetChunkSize) {
  for (uint32_t v : {0u, 0x7FFFFFFFu, 0x80000000u, 0x01000000u}) {
    Chunks c;
    c.fmt0(2, 0, 4, msg_type::SetChunkSize, 0).be32(v);
    Sink sink;
    EXPECT_THROW(sink.feed(c.b), ProtocolError) << v;
  }
  Sink sink;
  expect_error([&] { sink.feed(set_chunk_size_msg(0x7FFFFFFF)); }, "exceeds limit 16777215");
  Chunks shrt;
  shrt.fmt0(2, 0, 2, msg_type::SetChunkSize, 0).u8(0).u8(1);
  Sink s2;
  expect_error([&] { s2.feed(shrt.b); }, "expected at least 4");
  // A configured maximum is honoured.
  ChunkReaderLimits l;
  l.max_chunk_size = 65536;
  Sink s3(l);
  EXPECT_NO_THROW(s3.feed(set_chunk_size_msg(65536)));
  expect_error([&] { s3.feed(set_chunk_size_msg(65537, 65536)); }, "65537");
}

// ---- reader: limits ----

TEST(ChunkReader, MessageLengthOverLimit) {
  ChunkReaderLimits l;
  l.max_message_size = 1 << 20;
  Chunks c;
  // The largest length the 3-byte field can announce (a 2 GiB message cannot even be expressed).
  c.fmt0(4, 0, 0xFFFFFF, msg_type::Video, 1);
  Sink sink(l);
  expect_error([&] { sink.feed(c.b); }, "message length 16777215 exceeds limit 1048576");
  Chunks ok;
  ok.fmt0(4, 0, 1 << 20, msg_type::Video, 1);
  Sink s2(l);
  EXPECT_NO_THROW(s2.feed(ok.b));
  // fmt 1 announcing more than the limit
  Chunks f1;
  f1.fmt0(4, 0, 1, msg_type::Video, 1).u8(0).fmt1(4, 0, (1 << 20) + 1, msg_type::Video);
  Sink s3(l);
  expect_error([&] { s3.feed(f1.b); }, "exceeds limit");
}

TEST(ChunkReader, TooManyPartialMessages) {
  ChunkReaderLimits l;
  l.max_partial_messages = 4;
  Chunks c;
  Bytes first = pattern(128, 40);  // one full chunk each, so every message stays partial
  for (uint32_t csid = 3; csid < 8; ++csid) c.fmt0(csid, 0, 1000, msg_type::Video, 1).data(first, 0, 128);
  Sink sink(l);
  expect_error([&] { sink.feed(c.b); }, "at most 4 partially received");
}

TEST(ChunkReader, PartialBytesLimit) {
  ChunkReaderLimits l;
  l.max_partial_bytes = 3 << 20;
  Chunks c;
  Bytes first = pattern(128, 41);
  for (uint32_t csid = 3; csid < 7; ++csid) c.fmt0(csid, 0, 1 << 20, msg_type::Video, 1).data(first, 0, 128);
  Sink sink(l);
  expect_error([&] { sink.feed(c.b); }, "limit 3145728");
}

TEST(ChunkReader, TooManyChunkStreams) {
  ChunkReaderLimits l;
  l.max_chunk_streams = 10;
  Chunks c;
  for (uint32_t csid = 3; csid < 14; ++csid) c.fmt0(csid, 0, 1, msg_type::Audio, 1).u8(1);
  Sink sink(l);
  expect_error([&] { sink.feed(c.b); }, "at most 10 chunk streams");
  EXPECT_EQ(sink.msgs.size(), 10u);
}

// ---- reader: header-only mode (rill-bench players) ----

namespace {

// What a header-only reader delivers: the message (payload = kept bytes) and the announced length.
struct HeaderSink {
  struct Got {
    RtmpMessage m;
    uint32_t length;
  };
  std::vector<Got> msgs;
  ChunkReader reader;
  explicit HeaderSink(uint32_t keep, ChunkReaderLimits l = {})
      : reader([this](RtmpMessage&& m, uint32_t length) { msgs.push_back({std::move(m), length}); }, keep, l) {}
  void feed_pieces(const Bytes& b, size_t piece) {
    for (size_t pos = 0; pos < b.size(); pos += piece) {
      reader.feed(std::span<const uint8_t>(b.data() + pos, std::min(piece, b.size() - pos)));
    }
  }
};

Bytes prefix(const Bytes& b, size_t n) { return Bytes(b.begin(), b.begin() + std::min(n, b.size())); }

}  // namespace

TEST(ChunkReaderHeaderOnly, KeepsAPrefixOfMediaAndWholeOtherMessages) {
  Bytes wire;
  auto add = [&](uint8_t type, uint32_t csid, uint32_t sid, uint32_t ts, const Bytes& p, uint32_t cs) {
    Bytes w = serialize(type, sid, ts, csid, p, cs);
    wire.insert(wire.end(), w.begin(), w.end());
  };
  const Bytes cmd = pattern(700, 1), video = pattern(1000, 2), audio = pattern(300, 3);
  const Bytes big = pattern(10000, 4), agg = pattern(900, 5), tiny = pattern(5, 6);
  add(msg_type::CommandAmf0, 3, 0, 0, cmd, 128);       // 6 chunks, kept whole
  add(msg_type::Video, 6, 1, 40, video, 128);          // 8 chunks
  add(msg_type::Audio, 4, 1, 0x1234567, audio, 128);   // 32-bit timestamp
  Bytes scs = set_chunk_size_msg(4096);
  wire.insert(wire.end(), scs.begin(), scs.end());
  add(msg_type::Video, 6, 1, 0xFFFFFF + 5, big, 4096);  // extended timestamp, 3 chunks
  add(msg_type::DataAmf0, 5, 1, 0, {}, 4096);          // empty message
  add(msg_type::Aggregate, 7, 1, 90, agg, 4096);       // kept whole: the owner splits it
  add(msg_type::Video, 70, 1, 80, tiny, 4096);         // 2-byte basic header, shorter than the prefix
  add(msg_type::Video, 400, 1, 120, video, 4096);      // 3-byte basic header
  add(msg_type::UserControl, 2, 0, 0, {0, 6, 0, 0, 0, 9}, 4096);

  for (size_t piece : {size_t(1), size_t(7), size_t(4096), wire.size()}) {
    HeaderSink sink(16);
    sink.feed_pieces(wire, piece);
    ASSERT_EQ(sink.msgs.size(), 10u) << piece;
    EXPECT_EQ(sink.reader.bytes_received(), wire.size());
    EXPECT_EQ(sink.reader.chunk_size(), 4096u);
    EXPECT_EQ(sink.reader.partial_messages(), 0u);
    EXPECT_EQ(sink.reader.partial_bytes(), 0u);
    struct Want {
      uint8_t type;
      uint32_t csid, ts, length;
      Bytes payload;
    };
    const Want want[] = {
        {msg_type::CommandAmf0, 3, 0, 700, cmd},
        {msg_type::Video, 6, 40, 1000, prefix(video, 16)},
        {msg_type::Audio, 4, 0x1234567, 300, prefix(audio, 16)},
        {msg_type::SetChunkSize, 2, 0, 4, {0, 0, 0x10, 0}},
        {msg_type::Video, 6, 0xFFFFFF + 5, 10000, prefix(big, 16)},
        {msg_type::DataAmf0, 5, 0, 0, {}},
        {msg_type::Aggregate, 7, 90, 900, agg},
        {msg_type::Video, 70, 80, 5, tiny},
        {msg_type::Video, 400, 120, 1000, prefix(video, 16)},
        {msg_type::UserControl, 2, 0, 6, {0, 6, 0, 0, 0, 9}},
    };
    for (size_t i = 0; i < 10; ++i) {
      const auto& got = sink.msgs[i];
      EXPECT_EQ(got.m.type_id, want[i].type) << i;
      EXPECT_EQ(got.m.csid, want[i].csid) << i;
      EXPECT_EQ(got.m.timestamp, want[i].ts) << i;
      EXPECT_EQ(got.length, want[i].length) << i;
      EXPECT_EQ(to_bytes(got.m.payload), want[i].payload) << i << " piece " << piece;
      EXPECT_EQ(got.m.payload->capacity(), want[i].payload.size()) << i;  // only the kept bytes
    }
    EXPECT_EQ(sink.msgs[1].m.stream_id, 1u);
  }
}

TEST(ChunkReaderHeaderOnly, CompressedHeadersAndExtendedTimestamps) {
  // fmt 0 (ts 100, video 40 bytes: two chunks of 32), fmt 2 (delta 40), fmt 3 starting a new
  // message (delta 40 again), fmt 1 (delta 10, audio 2 bytes), then an extended delta on fmt 1
  // repeated on its fmt 3 continuation, and a fmt 3 message reusing it.
  const Bytes v = pattern(40, 7), a = pattern(2, 8), e = pattern(40, 9);
  Chunks c;
  c.b = set_chunk_size_msg(32);
  c.fmt0(6, 100, 40, msg_type::Video, 1).data(v, 0, 32).fmt3(6).data(v, 32, 8);
  c.fmt2(6, 40).data(v, 0, 32).fmt3(6).data(v, 32, 8);
  c.fmt3(6).data(v, 0, 32).fmt3(6).data(v, 32, 8);
  c.fmt1(6, 10, 2, msg_type::Audio).data(a, 0, 2);
  c.fmt1(6, 0x01000000, 40, msg_type::Video).data(e, 0, 32).fmt3(6).ext(0x01000000).data(e, 32, 8);
  c.fmt3(6).ext(0x01000000).data(e, 0, 32).fmt3(6).ext(0x01000000).data(e, 32, 8);
  for (size_t piece : {size_t(1), size_t(5), c.b.size()}) {
    HeaderSink sink(4);
    sink.feed_pieces(c.b, piece);
    ASSERT_EQ(sink.msgs.size(), 7u) << piece;
    const uint32_t ts[] = {0, 100, 140, 180, 190, 190 + 0x01000000u, 190 + 0x02000000u};
    const uint32_t len[] = {4, 40, 40, 40, 2, 40, 40};
    for (size_t i = 0; i < 7; ++i) {
      EXPECT_EQ(sink.msgs[i].m.timestamp, ts[i]) << i;
      EXPECT_EQ(sink.msgs[i].length, len[i]) << i;
      EXPECT_EQ(sink.msgs[i].m.stream_id, i ? 1u : 0u) << i;
    }
    EXPECT_EQ(to_bytes(sink.msgs[3].m.payload), prefix(v, 4));
    EXPECT_EQ(to_bytes(sink.msgs[4].m.payload), a);
    EXPECT_EQ(sink.msgs[4].m.type_id, msg_type::Audio);
    EXPECT_EQ(to_bytes(sink.msgs[6].m.payload), prefix(e, 4));
  }
}

TEST(ChunkReaderHeaderOnly, ExtendedTimestampNotRepeatedOnContinuation) {
  // As in normal mode, the 4 bytes that do not repeat the timestamp are payload (here: skipped).
  Bytes a = pattern(300, 13), s = pattern(5, 15);
  a[128] = 0x00;
  Chunks c;
  c.fmt0(4, 0x01000000, 300, msg_type::Video, 1).data(a, 0, 128);
  c.fmt3(4).data(a, 128, 128).fmt3(4).data(a, 256, 44);
  c.fmt0(3, 7, 5, msg_type::Audio, 1).data(s, 0, 5);
  for (uint32_t keep : {0u, 3u, 130u, 1000u}) {
    HeaderSink sink(keep);
    sink.feed_pieces(c.b, 3);
    ASSERT_EQ(sink.msgs.size(), 2u) << keep;
    EXPECT_EQ(sink.msgs[0].length, 300u);
    EXPECT_EQ(to_bytes(sink.msgs[0].m.payload), prefix(a, keep));
    EXPECT_EQ(sink.msgs[1].m.timestamp, 7u);
    EXPECT_EQ(to_bytes(sink.msgs[1].m.payload), prefix(s, keep));
  }
}

TEST(ChunkReaderHeaderOnly, SameAsNormalModeButTruncated) {
  // Random interleaving of every message type: header-only delivers what normal mode delivers,
  // with audio/video payloads cut to the prefix.
  std::mt19937 rng(77);
  const uint8_t types[] = {msg_type::Audio, msg_type::Video, msg_type::DataAmf0, msg_type::CommandAmf0,
                           msg_type::Aggregate, msg_type::Ack};
  Bytes wire = set_chunk_size_msg(200);
  for (int i = 0; i < 300; ++i) {
    uint8_t type = types[rng() % 6];
    Bytes p = pattern(type == msg_type::Ack ? 4 : rng() % 3000, rng());
    Bytes w = serialize(type, 1, rng() % 0x2000000, 3 + rng() % 5, p, 200);
    wire.insert(wire.end(), w.begin(), w.end());
  }
  Sink normal;
  HeaderSink header(32);
  normal.feed_pieces(wire, rng, 500);
  header.feed_pieces(wire, 333);
  ASSERT_EQ(normal.msgs.size(), header.msgs.size());
  for (size_t i = 0; i < normal.msgs.size(); ++i) {
    const RtmpMessage& n = normal.msgs[i];
    const RtmpMessage& h = header.msgs[i].m;
    EXPECT_EQ(h.type_id, n.type_id);
    EXPECT_EQ(h.timestamp, n.timestamp);
    EXPECT_EQ(h.csid, n.csid);
    EXPECT_EQ(header.msgs[i].length, n.payload.size());
    Bytes full = to_bytes(n.payload);
    EXPECT_EQ(to_bytes(h.payload), ChunkReader::truncatable(n.type_id) ? prefix(full, 32) : full) << i;
  }
}

TEST(ChunkReaderHeaderOnly, PartialBytesCountWhatIsKept) {
  ChunkReaderLimits l;
  l.max_partial_bytes = 100;  // far less than the media announced, more than the prefixes
  Chunks c;
  c.fmt0(4, 1, 5000, msg_type::Video, 1).data(pattern(128, 1), 0, 128);
  c.fmt0(5, 1, 6000, msg_type::Audio, 1).data(pattern(128, 2), 0, 128);
  HeaderSink sink(16, l);
  sink.feed_pieces(c.b, c.b.size());
  EXPECT_EQ(sink.reader.partial_messages(), 2u);
  EXPECT_EQ(sink.reader.partial_bytes(), 32u);
  // Abort (5.4.2) releases what the dropped message kept.
  Bytes abort = to_bytes(ChunkWriter::serialize(control_message(msg_type::Abort, abort_payload(4)), 128));
  sink.feed_pieces(abort, abort.size());
  EXPECT_EQ(sink.reader.partial_messages(), 1u);
  EXPECT_EQ(sink.reader.partial_bytes(), 16u);
  // Messages kept whole still count in full.
  Chunks big;
  big.fmt0(6, 1, 200, msg_type::CommandAmf0, 0);
  expect_error([&] { sink.feed_pieces(big.b, big.b.size()); }, "limit 100");
}

TEST(ChunkReaderHeaderOnly, RejectsWhatNormalModeRejects) {
  {
    Chunks c;  // fmt 2 first on a chunk stream
    c.basic(2, 9).be24(0).u8(0);
    HeaderSink sink(16);
    expect_error([&] { sink.feed_pieces(c.b, c.b.size()); }, "chunk stream 9");
  }
  {
    ChunkReaderLimits l;  // a 2 MB command message over a 1 MB limit
    l.max_message_size = 1 << 20;
    Chunks c;
    c.fmt0(3, 0, 2 << 20, msg_type::CommandAmf0, 0);
    HeaderSink sink(16, l);
    expect_error([&] { sink.feed_pieces(c.b, c.b.size()); }, "exceeds limit");
  }
  {
    Chunks c;  // Set Chunk Size 0
    c.fmt0(2, 0, 4, msg_type::SetChunkSize, 0).be32(0);
    HeaderSink sink(16);
    expect_error([&] { sink.feed_pieces(c.b, c.b.size()); }, "chunk size >= 1");
  }
}

// ---- control messages ----

TEST(RtmpMessage, ControlBuildersByteExact) {
  EXPECT_EQ(to_bytes(set_chunk_size_payload(4096)), (Bytes{0x00, 0x00, 0x10, 0x00}));
  EXPECT_EQ(to_bytes(abort_payload(65599)), (Bytes{0x00, 0x01, 0x00, 0x3F}));
  EXPECT_EQ(to_bytes(ack_payload(0x01020304)), (Bytes{0x01, 0x02, 0x03, 0x04}));
  EXPECT_EQ(to_bytes(window_ack_size_payload(2500000)), (Bytes{0x00, 0x26, 0x25, 0xA0}));
  EXPECT_EQ(to_bytes(set_peer_bandwidth_payload(2500000, bw_limit::Dynamic)),
            (Bytes{0x00, 0x26, 0x25, 0xA0, 0x02}));
  EXPECT_EQ(to_bytes(user_control_payload(uc_event::StreamBegin, 1)),
            (Bytes{0x00, 0x00, 0x00, 0x00, 0x00, 0x01}));
  EXPECT_EQ(to_bytes(user_control_payload(uc_event::SetBufferLength, 1, 3000)),
            (Bytes{0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x0B, 0xB8}));
  EXPECT_EQ(to_bytes(user_control_payload(uc_event::PingResponse, 0xDEADBEEF)),
            (Bytes{0x00, 0x07, 0xDE, 0xAD, 0xBE, 0xEF}));
  // A whole Set Chunk Size message on the wire.
  Bytes wire = set_chunk_size_msg(4096);
  EXPECT_EQ(wire, (Bytes{0x02, 0, 0, 0, 0, 0, 4, 0x01, 0, 0, 0, 0, 0x00, 0x00, 0x10, 0x00}));
}

TEST(RtmpMessage, Parsers) {
  Bytes sbl = {0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x0B, 0xB8};
  UserControlEvent ev = parse_user_control(sbl);
  EXPECT_EQ(ev.event, uc_event::SetBufferLength);
  EXPECT_EQ(ev.value1, 1u);
  EXPECT_EQ(ev.value2, 3000u);
  ev = parse_user_control(Bytes{0x00, 0x06, 0x00, 0x00, 0x01, 0x00});
  EXPECT_EQ(ev.event, uc_event::PingRequest);
  EXPECT_EQ(ev.value1, 256u);
  ev = parse_user_control(Bytes{0x00, 0x20});  // BufferReady with no data: tolerated
  EXPECT_EQ(ev.event, 32u);
  EXPECT_THROW(parse_user_control(Bytes{0x00}), ProtocolError);
  EXPECT_THROW(parse_user_control(Bytes{0x00, 0x03, 0, 0, 0, 1}), ProtocolError);
  EXPECT_THROW(parse_user_control(Bytes{0x00, 0x00, 0, 0}), ProtocolError);
  EXPECT_EQ(parse_ack(Bytes{0, 0, 1, 0}), 256u);
  EXPECT_THROW(parse_ack(Bytes{0, 0, 1}), ProtocolError);
  EXPECT_THROW(parse_window_ack_size(Bytes{}), ProtocolError);
  EXPECT_THROW(parse_set_peer_bandwidth(Bytes{0, 0, 0, 1}), ProtocolError);
  EXPECT_THROW(parse_set_peer_bandwidth(Bytes{0, 0, 0, 1, 3}), ProtocolError);
  EXPECT_EQ(parse_set_chunk_size(Bytes{0x7F, 0xFF, 0xFF, 0xFF}), 0x7FFFFFFFu);
  EXPECT_THROW(parse_set_chunk_size(Bytes{0, 0, 0, 0}), ProtocolError);
  EXPECT_THROW(parse_set_chunk_size(Bytes{0x80, 0, 0, 1}), ProtocolError);
}

// ---- aggregates (spec 7.1.6) ----

namespace {
// FLV-style sub-message: type, length (3), timestamp (3 low + 1 high), stream id (3), body,
// back pointer (4).
void add_sub(Bytes& agg, uint8_t type, const Bytes& body, uint32_t ts, uint32_t sid,
             bool back_pointer = true) {
  Chunks c;
  c.u8(type).be24(uint32_t(body.size())).be24(ts & 0xFFFFFF).u8(ts >> 24).be24(sid);
  c.data(body, 0, body.size());
  if (back_pointer) c.be32(uint32_t(body.size() + 11));
  agg.insert(agg.end(), c.b.begin(), c.b.end());
}
}  // namespace

TEST(RtmpMessage, SplitAggregate) {
  Bytes a1 = pattern(7, 30), v1 = pattern(300, 31), a2 = pattern(0, 32);
  Bytes agg;
  add_sub(agg, msg_type::Audio, a1, 0x01005000, 99);  // ts with the high byte in use
  add_sub(agg, msg_type::Video, v1, 0x01005000, 99);
  add_sub(agg, msg_type::Audio, a2, 0x01005017, 99, /*back_pointer=*/false);
  RtmpMessage m{msg_type::Aggregate, 7, 100, 6, SharedBuffer::copy_of(agg)};
  std::vector<RtmpMessage> subs = split_aggregate(m);
  ASSERT_EQ(subs.size(), 3u);
  EXPECT_EQ(subs[0].type_id, msg_type::Audio);
  EXPECT_EQ(subs[0].timestamp, 100u);
  EXPECT_EQ(subs[1].timestamp, 100u);
  EXPECT_EQ(subs[2].timestamp, 123u);
  EXPECT_EQ(to_bytes(subs[0].payload), a1);
  EXPECT_EQ(to_bytes(subs[1].payload), v1);
  EXPECT_EQ(subs[2].payload.size(), 0u);
  for (auto& s : subs) {
    EXPECT_EQ(s.stream_id, 7u);  // the aggregate's stream id overrides
    EXPECT_EQ(s.csid, 6u);
  }
  // Rebasing wraps mod 2^32.
  Bytes w;
  add_sub(w, msg_type::Audio, a1, 0x10, 1);
  add_sub(w, msg_type::Audio, a1, 0x20, 1);
  subs = split_aggregate(RtmpMessage{msg_type::Aggregate, 1, 0xFFFFFFF0, 4, SharedBuffer::copy_of(w)});
  ASSERT_EQ(subs.size(), 2u);
  EXPECT_EQ(subs[1].timestamp, 0u);
  // Empty aggregate: nothing.
  EXPECT_TRUE(split_aggregate(RtmpMessage{msg_type::Aggregate, 1, 0, 4, {}}).empty());
}

TEST(RtmpMessage, SplitAggregateBoundsChecked) {
  Bytes agg;
  add_sub(agg, msg_type::Video, pattern(50, 33), 0, 1);
  for (size_t cut : {size_t(5), size_t(11 + 49), agg.size() - 2}) {
    Bytes t(agg.begin(), agg.begin() + cut);
    RtmpMessage m{msg_type::Aggregate, 1, 0, 4, SharedBuffer::copy_of(t)};
    EXPECT_THROW(split_aggregate(m), ProtocolError) << cut;
  }
  Bytes huge = {msg_type::Video, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 1, 0, 0};
  EXPECT_THROW(split_aggregate(RtmpMessage{msg_type::Aggregate, 1, 0, 4, SharedBuffer::copy_of(huge)}),
               ProtocolError);
}
