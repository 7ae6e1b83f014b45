#include "rill/protocol/amf0.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using rill::protocol::Amf0Decoder;
using rill::protocol::Amf0Encoder;
using rill::protocol::Amf0Limits;
using rill::protocol::Amf0Property;
using rill::protocol::Amf0Value;
using rill::protocol::ProtocolError;
using Bytes = std::vector<uint8_t>;

namespace {

Bytes encode(const Amf0Value& v) {
  Bytes out;
  Amf0Encoder(out).write_value(v);
  return out;
}

Amf0Value decode_one(const Bytes& b, Amf0Limits limits = {}) {
  Amf0Decoder d(b, limits);
  Amf0Value v = d.decode();
  EXPECT_TRUE(d.at_end()) << "trailing bytes after the value";
  return v;
}

Amf0Value round_trip(const Amf0Value& v) { return decode_one(encode(v)); }

void append_str(Bytes& b, std::string_view s) {
  b.push_back(0x02);
  b.push_back(static_cast<uint8_t>(s.size() >> 8));
  b.push_back(static_cast<uint8_t>(s.size()));
  b.insert(b.end(), s.begin(), s.end());
}

void append_key(Bytes& b, std::string_view s) {
  b.push_back(static_cast<uint8_t>(s.size() >> 8));
  b.push_back(static_cast<uint8_t>(s.size()));
  b.insert(b.end(), s.begin(), s.end());
}

// Expects ProtocolError whose message contains `part`.
template <typename F>
void expect_error(F&& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "expected ProtocolError containing \"" << part << "\"";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << "message: " << e.what();
  }
}

Amf0Value sample_nested() {
  Amf0Value inner = Amf0Value::object({{"level", Amf0Value::string("status")},
                                       {"code", Amf0Value::string("NetStream.Publish.Start")},
                                       {"when", Amf0Value::date(1700000000000.0, -60)}});
  return Amf0Value::object({
      {"n", Amf0Value::number(-2.5)},
      {"b", Amf0Value::boolean(true)},
      {"s", Amf0Value::string("h\xc3\xa9llo")},
      {"nul", Amf0Value::null()},
      {"und", Amf0Value::undefined()},
      {"arr", Amf0Value::strict_array({Amf0Value::number(1), Amf0Value::string("x"), inner})},
      {"ecma", Amf0Value::ecma_array({{"width", Amf0Value::number(1280)}, {"height", Amf0Value::number(720)}})},
      {"inner", inner},
  });
}

}  // namespace

TEST(Amf0, NumberRoundTripAndBytes) {
  for (double d : {0.0, -0.0, 1.0, -1.5, 3.141592653589793, 1e300, -1e-300,
                   std::numeric_limits<double>::infinity(), std::numeric_limits<double>::denorm_min()}) {
    Amf0Value v = round_trip(Amf0Value::number(d));
    ASSERT_TRUE(v.is_number());
    EXPECT_EQ(std::signbit(v.as_number()), std::signbit(d));
    EXPECT_EQ(v.as_number(), d);
  }
  EXPECT_TRUE(std::isnan(round_trip(Amf0Value::number(std::nan(""))).as_number()));
  // AMF0 §2.2: marker 0x00 + big-endian IEEE 754 double.
  EXPECT_EQ(encode(Amf0Value::number(1.0)), (Bytes{0x00, 0x3F, 0xF0, 0, 0, 0, 0, 0, 0}));
}

TEST(Amf0, BooleanNullUndefined) {
  EXPECT_EQ(encode(Amf0Value::boolean(true)), (Bytes{0x01, 0x01}));
  EXPECT_EQ(encode(Amf0Value::boolean(false)), (Bytes{0x01, 0x00}));
  EXPECT_TRUE(round_trip(Amf0Value::boolean(true)).as_bool());
  EXPECT_FALSE(round_trip(Amf0Value::boolean(false)).as_bool());
  EXPECT_TRUE(decode_one(Bytes{0x01, 0x7F}).as_bool());  // any non-zero byte is true
  EXPECT_EQ(encode(Amf0Value::null()), (Bytes{0x05}));
  EXPECT_EQ(encode(Amf0Value::undefined()), (Bytes{0x06}));
  EXPECT_TRUE(round_trip(Amf0Value::null()).is_null());
  EXPECT_TRUE(round_trip(Amf0Value::undefined()).is_undefined());
  EXPECT_TRUE(decode_one(Bytes{0x0D}).is_undefined());  // "unsupported" marker
  EXPECT_TRUE(Amf0Value().is_null());
}

TEST(Amf0, StringAndLongString) {
  EXPECT_EQ(encode(Amf0Value::string("ab")), (Bytes{0x02, 0x00, 0x02, 'a', 'b'}));
  EXPECT_EQ(round_trip(Amf0Value::string("")).as_string(), "");
  std::string with_nul("a\0b", 3);
  EXPECT_EQ(round_trip(Amf0Value::string(with_nul)).as_string(), with_nul);

  std::string max_short(65535, 'x');
  Bytes b = encode(Amf0Value::string(max_short));
  EXPECT_EQ(b[0], 0x02);
  EXPECT_EQ(b.size(), 3u + 65535);

  std::string long_str(70000, 'y');
  b = encode(Amf0Value::string(long_str));
  EXPECT_EQ(b[0], 0x0C);  // AMF0 §2.14 long string
  EXPECT_EQ(b.size(), 5u + 70000);
  Amf0Value v = decode_one(b);
  ASSERT_TRUE(v.is_string());  // long strings decode as plain strings
  EXPECT_EQ(v.as_string(), long_str);

  // XML document (AMF0 §2.17) decodes as a string.
  EXPECT_EQ(decode_one(Bytes{0x0F, 0, 0, 0, 3, '<', 'a', '>'}).as_string(), "<a>");
}

TEST(Amf0, DateRoundTrip) {
  Amf0Value v = round_trip(Amf0Value::date(1700000000123.0, -120));
  ASSERT_TRUE(v.is_date());
  EXPECT_EQ(v.date_ms(), 1700000000123.0);
  EXPECT_EQ(v.date_timezone(), -120);
  EXPECT_EQ(encode(Amf0Value::date(0, 0)), (Bytes{0x0B, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(Amf0, ObjectKeepsOrderAndDuplicates) {
  Amf0Value obj = Amf0Value::object({{"z", Amf0Value::number(1)}, {"a", Amf0Value::number(2)},
                                     {"z", Amf0Value::number(3)}});
  Bytes b = encode(obj);
  Bytes expected{0x03};
  append_key(expected, "z");
  expected.insert(expected.end(), {0x00, 0x3F, 0xF0, 0, 0, 0, 0, 0, 0});
  append_key(expected, "a");
  expected.insert(expected.end(), {0x00, 0x40, 0x00, 0, 0, 0, 0, 0, 0});
  append_key(expected, "z");
  expected.insert(expected.end(), {0x00, 0x40, 0x08, 0, 0, 0, 0, 0, 0});
  expected.insert(expected.end(), {0x00, 0x00, 0x09});
  EXPECT_EQ(b, expected);
  Amf0Value v = decode_one(b);
  ASSERT_TRUE(v.is_object());
  ASSERT_EQ(v.properties().size(), 3u);
  EXPECT_EQ(v.properties()[0].key, "z");
  EXPECT_EQ(v.properties()[1].key, "a");
  EXPECT_EQ(v.find_number("z"), 1.0);  // first match
  EXPECT_EQ(v, obj);
  EXPECT_EQ(round_trip(Amf0Value::object()), Amf0Value::object());
}

TEST(Amf0, EcmaArrayStaysEcma) {
  Amf0Value arr = Amf0Value::ecma_array({{"duration", Amf0Value::number(0)}, {"width", Amf0Value::number(1920)}});
  Bytes b = encode(arr);
  EXPECT_EQ(b[0], 0x08);
  EXPECT_EQ((Bytes{b[1], b[2], b[3], b[4]}), (Bytes{0, 0, 0, 2}));  // associative-count
  Amf0Value v = decode_one(b);
  EXPECT_TRUE(v.is_ecma_array());
  EXPECT_FALSE(v.is_object());
  EXPECT_TRUE(v.has_properties());
  EXPECT_EQ(v.find_number("width"), 1920.0);
  EXPECT_EQ(v, arr);
  // The count is advisory: a wrong count still decodes up to the end marker.
  b[4] = 7;
  EXPECT_EQ(decode_one(b), arr);
}

TEST(Amf0, StrictArrayRoundTrip) {
  Amf0Value arr = Amf0Value::strict_array({Amf0Value::number(1), Amf0Value::null(), Amf0Value::string("s")});
  Bytes b = encode(arr);
  EXPECT_EQ((Bytes{b[0], b[1], b[2], b[3], b[4]}), (Bytes{0x0A, 0, 0, 0, 3}));
  Amf0Value v = decode_one(b);
  ASSERT_TRUE(v.is_strict_array());
  EXPECT_EQ(v.items().size(), 3u);
  EXPECT_EQ(v, arr);
  EXPECT_EQ(round_trip(Amf0Value::strict_array()), Amf0Value::strict_array());
}

TEST(Amf0, NestedRoundTripAndTypedObject) {
  Amf0Value v = sample_nested();
  EXPECT_EQ(round_trip(v), v);
  EXPECT_EQ(round_trip(v).find("inner")->find_string("code"), "NetStream.Publish.Start");

  // AMF0 §2.18 typed object: class name then properties; decodes as a plain object.
  Bytes b{0x10};
  append_key(b, "Cls");
  append_key(b, "k");
  append_str(b, "v");
  b.insert(b.end(), {0, 0, 9});
  Amf0Value t = decode_one(b);
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t.find_string("k"), "v");
}

TEST(Amf0, AccessorsAndBuilding) {
  Amf0Value v = sample_nested();
  EXPECT_EQ(v.find("missing"), nullptr);
  EXPECT_EQ(v.find_number("s"), std::nullopt);  // wrong type
  EXPECT_EQ(v.find_bool("b"), true);
  EXPECT_EQ(Amf0Value::number(1).find("x"), nullptr);
  expect_error([&] { (void)v.as_number(); }, "expected number, found object");
  expect_error([&] { (void)Amf0Value::string("x").as_bool(); }, "expected boolean, found string");
  expect_error([&] { (void)Amf0Value::null().properties(); }, "expected object or ECMA array, found null");
  expect_error([&] { (void)Amf0Value::object().items(); }, "expected strict array, found object");

  v.set("n", Amf0Value::number(7));
  v.set("new", Amf0Value::string("x"));
  EXPECT_EQ(v.find_number("n"), 7.0);
  EXPECT_EQ(v.properties().back().key, "new");
  Amf0Value arr = Amf0Value::strict_array();
  arr.push_back(Amf0Value::boolean(false));
  EXPECT_EQ(arr.items().size(), 1u);
  EXPECT_NE(Amf0Value::number(1), Amf0Value::string("1"));

  std::string dbg = Amf0Value::object({{"a", Amf0Value::string("b\"")}, {"n", Amf0Value::number(2)}}).to_debug_string();
  EXPECT_EQ(dbg, "{a: \"b\\\"\", n: 2}");
  EXPECT_LE(Amf0Value::string(std::string(5000, 'x')).to_debug_string(100).size(), 103u);
}

TEST(Amf0, StreamingEncoderMatchesValueEncoder) {
  Bytes a;
  Amf0Encoder e(a);
  e.write_string("onStatus");
  e.write_number(0);
  e.write_null();
  e.begin_object();
  e.write_key("level");
  e.write_string("status");
  e.write_key("ok");
  e.write_bool(true);
  e.end_object();
  e.begin_ecma_array(1);
  e.write_key("x");
  e.write_undefined();
  e.end_object();
  e.begin_strict_array(1);
  e.write_date(5, 1);

  std::vector<Amf0Value> values{
      Amf0Value::string("onStatus"), Amf0Value::number(0), Amf0Value::null(),
      Amf0Value::object({{"level", Amf0Value::string("status")}, {"ok", Amf0Value::boolean(true)}}),
      Amf0Value::ecma_array({{"x", Amf0Value::undefined()}}),
      Amf0Value::strict_array({Amf0Value::date(5, 1)})};
  EXPECT_EQ(a, rill::protocol::amf0_encode_all(values));
  EXPECT_EQ(Amf0Decoder(a).decode_all(), values);

  // write_object / write_ecma_array force the container marker; a std::string sink works too.
  std::string s;
  Amf0Encoder es(s);
  es.write_ecma_array(Amf0Value::object({{"k", Amf0Value::number(1)}}));
  es.write_object(Amf0Value::ecma_array({{"k", Amf0Value::number(1)}}));
  Bytes sb(s.begin(), s.end());
  auto decoded = Amf0Decoder(sb).decode_all();
  ASSERT_EQ(decoded.size(), 2u);
  EXPECT_TRUE(decoded[0].is_ecma_array());
  EXPECT_TRUE(decoded[1].is_object());

  Bytes junk;
  expect_error([&] { Amf0Encoder(junk).write_key(""); }, "empty property name");
  expect_error([&] { Amf0Encoder(junk).write_key(std::string(70000, 'k')); }, "exceeds 65535");
}

// The connect command ffmpeg (librtmp-style player) sends, byte for byte:
// "connect", 1.0 (transaction id), object{app, flashVer, tcUrl, fpad, capabilities,
// audioCodecs, videoCodecs, videoFunction}.
static const uint8_t kConnect[] = {
    0x02, 0x00, 0x07, 'c', 'o', 'n', 'n', 'e', 'c', 't',                      // "connect"
    0x00, 0x3F, 0xF0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,                    // 1.0
    0x03,                                                                    // object
    0x00, 0x03, 'a', 'p', 'p', 0x02, 0x00, 0x04, 'l', 'i', 'v', 'e',         // app: "live"
    0x00, 0x08, 'f', 'l', 'a', 's', 'h', 'V', 'e', 'r',                      // flashVer:
    0x02, 0x00, 0x0D, 'L', 'N', 'X', ' ', '9', ',', '0', ',', '1', '2', '4', ',', '2',  // "LNX 9,0,124,2"
    0x00, 0x05, 't', 'c', 'U', 'r', 'l',                                     // tcUrl:
    0x02, 0x00, 0x1A, 'r', 't', 'm', 'p', ':', '/', '/', 'l', 'o', 'c', 'a', 'l', 'h', 'o', 's', 't', ':', '1',
    '9', '3', '5', '/', 'l', 'i', 'v', 'e',                                  // "rtmp://localhost:1935/live"
    0x00, 0x04, 'f', 'p', 'a', 'd', 0x01, 0x00,                              // fpad: false
    0x00, 0x0C, 'c', 'a', 'p', 'a', 'b', 'i', 'l', 'i', 't', 'i', 'e', 's',  // capabilities:
    0x00, 0x40, 0x2E, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,                    // 15.0
    0x00, 0x0B, 'a', 'u', 'd', 'i', 'o', 'C', 'o', 'd', 'e', 'c', 's',       // audioCodecs:
    0x00, 0x40, 0xAF, 0xCE, 0x00, 0x00, 0x00, 0x00, 0x00,                    // 4071.0
    0x00, 0x0B, 'v', 'i', 'd', 'e', 'o', 'C', 'o', 'd', 'e', 'c', 's',       // videoCodecs:
    0x00, 0x40, 0x6F, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00,                    // 252.0
    0x00, 0x0D, 'v', 'i', 'd', 'e', 'o', 'F', 'u', 'n', 'c', 't', 'i', 'o', 'n',  // videoFunction:
    0x00, 0x3F, 0xF0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,                    // 1.0
    0x00, 0x00, 0x09,                                                        // object end
};

TEST(Amf0, DecodesFfmpegConnectCommand) {
  auto values = Amf0Decoder(kConnect).decode_all();
  ASSERT_EQ(values.size(), 3u);
  EXPECT_EQ(values[0].as_string(), "connect");
  EXPECT_EQ(values[1].as_number(), 1.0);
  const Amf0Value& obj = values[2];
  ASSERT_TRUE(obj.is_object());
  ASSERT_EQ(obj.properties().size(), 8u);
  EXPECT_EQ(obj.find_string("app"), "live");
  EXPECT_EQ(obj.find_string("flashVer"), "LNX 9,0,124,2");
  EXPECT_EQ(obj.find_string("tcUrl"), "rtmp://localhost:1935/live");
  EXPECT_EQ(obj.find_bool("fpad"), false);
  EXPECT_EQ(obj.find_number("capabilities"), 15.0);
  EXPECT_EQ(obj.find_number("audioCodecs"), 4071.0);
  EXPECT_EQ(obj.find_number("videoCodecs"), 252.0);
  EXPECT_EQ(obj.find_number("videoFunction"), 1.0);
  // Re-encoding reproduces the bytes exactly.
  EXPECT_EQ(rill::protocol::amf0_encode_all(values), Bytes(std::begin(kConnect), std::end(kConnect)));
}

TEST(Amf0, TruncationAtEveryOffsetThrows) {
  // A single value: every strict prefix is incomplete.
  Bytes b = encode(sample_nested());
  for (size_t n = 0; n < b.size(); ++n) {
    Bytes prefix(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_THROW(Amf0Decoder(prefix).decode(), ProtocolError) << "prefix " << n;
  }
  // A command: a prefix either throws or ends on a value boundary with fewer values.
  const size_t len = sizeof kConnect;
  for (size_t n = 0; n < len; ++n) {
    std::span<const uint8_t> prefix(kConnect, n);
    try {
      auto values = Amf0Decoder(prefix).decode_all();
      EXPECT_LT(values.size(), 3u) << "prefix " << n;
      EXPECT_TRUE(n == 0 || n == 10 || n == 19) << "prefix " << n << " decoded";
    } catch (const ProtocolError&) {
    }
  }
}

TEST(Amf0, MalformedInputs) {
  expect_error([] { Amf0Decoder(Bytes{}).decode(); }, "found end of data");
  for (uint8_t m : {0x04, 0x07, 0x0E, 0x11, 0x12, 0xFF}) {
    expect_error([&] { decode_one(Bytes{m, 0, 0}); }, "expected a supported type marker");
  }
  expect_error([] { decode_one(Bytes{0x09}); }, "object-end marker 0x09 outside an object");
  // String length beyond the end.
  expect_error([] { decode_one(Bytes{0x02, 0x00, 0x10, 'a', 'b'}); }, "needs 16 bytes, found 2");
  expect_error([] { decode_one(Bytes{0x00, 0x3F}); }, "number at offset 1 needs 8 bytes, found 1");
  // Long string declaring 2 GiB: refused by the limit before any allocation.
  expect_error([] { decode_one(Bytes{0x0C, 0x80, 0x00, 0x00, 0x00, 'x'}); }, "exceeds limit 1048576");
  // Empty key not followed by the object-end marker.
  expect_error([] { decode_one(Bytes{0x03, 0x00, 0x00, 0x05}); }, "expected object-end marker 0x09");
  // Strict array declaring 4 billion items, or more items than bytes left.
  expect_error([] { decode_one(Bytes{0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0x05}); }, "declares 4294967295 items, limit 4096");
  expect_error([] { decode_one(Bytes{0x0A, 0x00, 0x00, 0x01, 0x00, 0x05}); }, "only 1 bytes remain");
  // Typed access on decoded garbage still fails cleanly.
  expect_error([] { decode_one(Bytes{0x05}).as_string(); }, "expected string, found null");
}

TEST(Amf0, DeepNestingThrowsCleanly) {
  const size_t kDepth = 10000;
  // 10,000 nested objects: {a: {a: {a: ...}}}.
  Bytes objects;
  for (size_t i = 0; i < kDepth; ++i) {
    objects.push_back(0x03);
    append_key(objects, "a");
  }
  objects.push_back(0x05);
  for (size_t i = 0; i < kDepth; ++i) objects.insert(objects.end(), {0, 0, 9});
  expect_error([&] { Amf0Decoder(objects).decode(); }, "nests deeper than 32 levels");

  // Same with strict arrays and ECMA arrays, and with an absurd configured limit.
  Bytes arrays;
  for (size_t i = 0; i < kDepth; ++i) arrays.insert(arrays.end(), {0x0A, 0, 0, 0, 1});
  arrays.push_back(0x05);
  expect_error([&] { Amf0Decoder(arrays).decode(); }, "strict array");
  Amf0Limits huge;
  huge.max_depth = 1u << 30;
  expect_error([&] { Amf0Decoder(arrays, huge).decode(); }, "nests deeper than 256 levels");

  Bytes ecma;
  for (size_t i = 0; i < kDepth; ++i) {
    ecma.insert(ecma.end(), {0x08, 0, 0, 0, 1});
    append_key(ecma, "e");
  }
  expect_error([&] { Amf0Decoder(ecma).decode(); }, "ECMA array");

  // Exactly at the limit is fine; one more level is not.
  auto nested = [](size_t depth) {
    Amf0Value v = Amf0Value::null();
    for (size_t i = 0; i < depth; ++i) v = Amf0Value::object({{"a", v}});
    return encode(v);
  };
  EXPECT_NO_THROW(Amf0Decoder(nested(32)).decode());
  EXPECT_THROW(Amf0Decoder(nested(33)).decode(), ProtocolError);
}

TEST(Amf0, ElementLimits) {
  // 5000 properties in one object > max_elements 4096.
  Amf0Value big = Amf0Value::object();
  for (int i = 0; i < 5000; ++i) big.properties().push_back({std::string("k").append(std::to_string(i)), Amf0Value::null()});
  Bytes b = encode(big);
  expect_error([&] { Amf0Decoder(b).decode(); }, "more than 4096 properties");
  Amf0Limits loose;
  loose.max_elements = 10000;
  EXPECT_EQ(Amf0Decoder(b, loose).decode().properties().size(), 5000u);

  // Total values over the decoder's lifetime.
  Amf0Limits tight;
  tight.max_total_elements = 10;
  Bytes many(11, 0x05);  // eleven nulls
  expect_error([&] { Amf0Decoder(many, tight).decode_all(); }, "more than 10 values");
  Bytes ten(10, 0x05);
  EXPECT_EQ(Amf0Decoder(ten, tight).decode_all().size(), 10u);

  // String limit.
  Amf0Limits small_str;
  small_str.max_string = 4;
  Bytes s;
  append_str(s, "hello");
  expect_error([&] { Amf0Decoder(s, small_str).decode(); }, "string at offset 3 of 5 bytes exceeds limit 4");
}

TEST(Amf0, DecoderPositionAndSkip) {
  Amf0Decoder d(kConnect);
  EXPECT_EQ(d.decode().as_string(), "connect");
  EXPECT_EQ(d.offset(), 10u);
  d.skip();
  EXPECT_EQ(d.offset(), 19u);
  EXPECT_EQ(d.remaining(), sizeof kConnect - 19);
  EXPECT_TRUE(d.decode().is_object());
  EXPECT_TRUE(d.at_end());
  EXPECT_THROW(d.decode(), ProtocolError);
}
