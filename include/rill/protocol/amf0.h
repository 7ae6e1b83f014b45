#pragma once
// AMF0 (Action Message Format 0): the value encoding of RTMP command and data messages and of
// FLV script tags. Reference: Adobe "Action Message Format -- AMF 0" (2007), cited below as
// "AMF0 §x". All multi-byte numbers are big-endian (AMF0 §1.3).
//
// Decoding is bounded: nesting depth, elements per container, elements in total and string length
// are limited (Amf0Limits), and every violation throws ProtocolError naming what was expected and
// what was found. Nothing is allocated from an untrusted length before it is checked.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rill/protocol/error.h"

namespace rill::protocol {

// Type markers (AMF0 §2.1).
enum class Amf0Marker : uint8_t {
  Number = 0x00,
  Boolean = 0x01,
  String = 0x02,
  Object = 0x03,
  MovieClip = 0x04,  // reserved, not supported
  Null = 0x05,
  Undefined = 0x06,
  Reference = 0x07,  // not supported (RTMP peers do not send it; it enables reference bombs)
  EcmaArray = 0x08,
  ObjectEnd = 0x09,
  StrictArray = 0x0A,
  Date = 0x0B,
  LongString = 0x0C,
  Unsupported = 0x0D,  // decoded as undefined
  RecordSet = 0x0E,    // reserved, not supported
  XmlDocument = 0x0F,  // decoded as a string
  TypedObject = 0x10,  // decoded as an object (class name dropped)
  AvmPlus = 0x11,      // switch to AMF3: not supported
};

struct Amf0Property;

// One AMF0 value. Objects and ECMA arrays keep their properties in wire order (duplicates kept,
// find() returns the first); an ECMA array remembers that it was one so it re-encodes as one.
class Amf0Value {
 public:
  enum class Type : uint8_t { Null, Undefined, Number, Boolean, String, Object, EcmaArray, StrictArray, Date };
  using Properties = std::vector<Amf0Property>;
  using Items = std::vector<Amf0Value>;

  Amf0Value() = default;  // null

  static Amf0Value null();
  static Amf0Value undefined();
  static Amf0Value number(double v);
  static Amf0Value boolean(bool v);
  static Amf0Value string(std::string v);
  static Amf0Value object();
  static Amf0Value object(Properties props);
  static Amf0Value ecma_array();
  static Amf0Value ecma_array(Properties props);
  static Amf0Value strict_array();
  static Amf0Value strict_array(Items items);
  static Amf0Value date(double ms_since_epoch, int16_t timezone = 0);

  Type type() const { return type_; }
  const char* type_name() const;

  bool is_null() const { return type_ == Type::Null; }
  bool is_undefined() const { return type_ == Type::Undefined; }
  bool is_number() const { return type_ == Type::Number; }
  bool is_bool() const { return type_ == Type::Boolean; }
  bool is_string() const { return type_ == Type::String; }
  bool is_object() const { return type_ == Type::Object; }
  bool is_ecma_array() const { return type_ == Type::EcmaArray; }
  bool is_strict_array() const { return type_ == Type::StrictArray; }
  bool is_date() const { return type_ == Type::Date; }
  // Object or ECMA array: both are key/value lists and a reader should accept either.
  bool has_properties() const { return is_object() || is_ecma_array(); }

  // Typed access; each throws ProtocolError ("amf0: expected number, found string") on a mismatch,
  // so a command handler that reads a malformed argument closes that connection cleanly.
  double as_number() const;
  bool as_bool() const;
  const std::string& as_string() const;
  const Properties& properties() const;  // object or ECMA array
  Properties& properties();
  const Items& items() const;  // strict array
  Items& items();
  double date_ms() const;
  int16_t date_timezone() const;

  // Lookup on an object or ECMA array (first match); nullptr when absent or not a container.
  const Amf0Value* find(std::string_view key) const;
  std::optional<double> find_number(std::string_view key) const;
  std::optional<std::string_view> find_string(std::string_view key) const;
  std::optional<bool> find_bool(std::string_view key) const;

  // Building: set() replaces the first property named key or appends one (object / ECMA array);
  // push_back() appends to a strict array.
  Amf0Value& set(std::string_view key, Amf0Value v);
  void push_back(Amf0Value v);

  // Short, bounded, JSON-like rendering for log lines.
  std::string to_debug_string(size_t max_chars = 512) const;

  friend bool operator==(const Amf0Value& a, const Amf0Value& b);

 private:
  explicit Amf0Value(Type t);
  void require(Type t) const;

  Type type_ = Type::Null;
  bool bool_ = false;
  int16_t tz_ = 0;
  double num_ = 0.0;  // number, or date milliseconds
  std::string str_;
  Properties props_;
  Items items_;
};

struct Amf0Property {
  std::string key;
  Amf0Value value;
  friend bool operator==(const Amf0Property& a, const Amf0Property& b) {
    return a.key == b.key && a.value == b.value;
  }
};

struct Amf0Limits {
  size_t max_depth = 32;             // nested containers; a top-level object is depth 1
  size_t max_elements = 4096;        // properties or items in one container
  size_t max_string = 1 << 20;       // bytes in one string, long string or XML document
  size_t max_total_elements = 65536;  // values decoded over the decoder's lifetime
};

// Hard ceiling on max_depth whatever the limits say: decoding recurses once per level, and this
// keeps the stack use small (a few hundred bytes per level) even with a misconfigured limit.
inline constexpr size_t kAmf0MaxDepthCeiling = 256;

class Amf0Decoder {
 public:
  explicit Amf0Decoder(std::span<const uint8_t> data, Amf0Limits limits = {});

  // Decodes the next value; throws ProtocolError at end of input or on malformed input.
  Amf0Value decode();
  // Decodes values until the input is exhausted (an RTMP command is a sequence of values).
  std::vector<Amf0Value> decode_all();

  bool at_end() const { return pos_ >= data_.size(); }
  size_t offset() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }
  // Skips past the next value without keeping it (still validated and limited).
  void skip() { (void)decode(); }

 private:
  Amf0Value decode_container(Amf0Marker marker, size_t at, size_t depth);
  Amf0Value decode_strict_array(size_t at, size_t depth);
  Amf0Value decode_value(size_t depth);
  void decode_properties(Amf0Value::Properties& out, size_t depth, const char* what);
  std::string read_utf8(size_t len, const char* what);
  uint8_t read_u8(const char* what);
  uint16_t read_u16(const char* what);
  uint32_t read_u32(const char* what);
  double read_double(const char* what);
  void need(size_t n, const char* what) const;
  void count_element();

  std::span<const uint8_t> data_;
  Amf0Limits limits_;
  size_t pos_ = 0;
  size_t total_elements_ = 0;
};

// Appends AMF0 to a byte vector or a string (whichever the constructor was given).
class Amf0Encoder {
 public:
  explicit Amf0Encoder(std::vector<uint8_t>& out) : vec_(&out) {}
  explicit Amf0Encoder(std::string& out) : str_(&out) {}

  void write_number(double v);
  void write_bool(bool v);
  void write_string(std::string_view s);  // long string (AMF0 §2.14) when longer than 65535
  void write_null();
  void write_undefined();
  void write_date(double ms_since_epoch, int16_t timezone = 0);

  // Streaming containers: begin_object(); write_key("k"); write_number(1); ... end_object().
  void begin_object();
  void begin_ecma_array(uint32_t count_hint);
  void write_key(std::string_view key);  // throws ProtocolError when longer than 65535
  void end_object();                      // also ends an ECMA array (same end marker)
  void begin_strict_array(uint32_t count);

  // Whole values. write_object / write_ecma_array write the properties of an object or ECMA
  // array value under that marker; write_value keeps the value's own type.
  void write_object(const Amf0Value& v);
  void write_ecma_array(const Amf0Value& v);
  void write_value(const Amf0Value& v);

 private:
  void write_value(const Amf0Value& v, size_t depth);
  void write_properties(const Amf0Value::Properties& props, size_t depth);
  void put(const void* p, size_t n);
  void put_u8(uint8_t b) { put(&b, 1); }
  void put_u16(uint16_t v);
  void put_u32(uint32_t v);
  void put_double(double v);

  std::vector<uint8_t>* vec_ = nullptr;
  std::string* str_ = nullptr;
};

// Encodes a sequence of values (e.g. a whole command message body).
std::vector<uint8_t> amf0_encode_all(std::span<const Amf0Value> values);

}  // namespace rill::protocol
