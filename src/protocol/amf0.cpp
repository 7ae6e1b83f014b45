#include "rill/protocol/amf0.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

#include "rill/core/byte_order.h"

namespace rill::protocol {

namespace {

const char* type_name_of(Amf0Value::Type t) {
  switch (t) {
    case Amf0Value::Type::Null: return "null";
    case Amf0Value::Type::Undefined: return "undefined";
    case Amf0Value::Type::Number: return "number";
    case Amf0Value::Type::Boolean: return "boolean";
    case Amf0Value::Type::String: return "string";
    case Amf0Value::Type::Object: return "object";
    case Amf0Value::Type::EcmaArray: return "ECMA array";
    case Amf0Value::Type::StrictArray: return "strict array";
    case Amf0Value::Type::Date: return "date";
  }
  return "?";
}

std::string hex_byte(uint8_t b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", b);
  return buf;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Amf0Value

Amf0Value Amf0Value::number(double v) {
  Amf0Value r(Type::Number);
  r.num_ = v;
  return r;
}

Amf0Value Amf0Value::boolean(bool v) {
  Amf0Value r(Type::Boolean);
  r.bool_ = v;
  return r;
}

Amf0Value Amf0Value::string(std::string v) {
  Amf0Value r(Type::String);
  r.str_ = std::move(v);
  return r;
}

Amf0Value::Amf0Value(Type t) : type_(t) {}
Amf0Value Amf0Value::null() { return Amf0Value(Type::Null); }
Amf0Value Amf0Value::undefined() { return Amf0Value(Type::Undefined); }
Amf0Value Amf0Value::object() { return Amf0Value(Type::Object); }
Amf0Value Amf0Value::ecma_array() { return Amf0Value(Type::EcmaArray); }
Amf0Value Amf0Value::strict_array() { return Amf0Value(Type::StrictArray); }

Amf0Value Amf0Value::object(Properties props) {
  Amf0Value r(Type::Object);
  r.props_ = std::move(props);
  return r;
}

Amf0Value Amf0Value::ecma_array(Properties props) {
  Amf0Value r(Type::EcmaArray);
  r.props_ = std::move(props);
  return r;
}

Amf0Value Amf0Value::strict_array(Items items) {
  Amf0Value r(Type::StrictArray);
  r.items_ = std::move(items);
  return r;
}

Amf0Value Amf0Value::date(double ms_since_epoch, int16_t timezone) {
  Amf0Value r(Type::Date);
  r.num_ = ms_since_epoch;
  r.tz_ = timezone;
  return r;
}

const char* Amf0Value::type_name() const { return type_name_of(type_); }

void Amf0Value::require(Type t) const {
  if (type_ != t) {
    throw ProtocolError(std::string("amf0: expected ") + type_name_of(t) + ", found " + type_name());
  }
}

double Amf0Value::as_number() const { require(Type::Number); return num_; }
bool Amf0Value::as_bool() const { require(Type::Boolean); return bool_; }
const std::string& Amf0Value::as_string() const { require(Type::String); return str_; }
double Amf0Value::date_ms() const { require(Type::Date); return num_; }
int16_t Amf0Value::date_timezone() const { require(Type::Date); return tz_; }

const Amf0Value::Properties& Amf0Value::properties() const {
  if (!has_properties()) {
    throw ProtocolError(std::string("amf0: expected object or ECMA array, found ") + type_name());
  }
  return props_;
}

Amf0Value::Properties& Amf0Value::properties() {
  return const_cast<Properties&>(std::as_const(*this).properties());
}

const Amf0Value::Items& Amf0Value::items() const { require(Type::StrictArray); return items_; }
Amf0Value::Items& Amf0Value::items() { require(Type::StrictArray); return items_; }

const Amf0Value* Amf0Value::find(std::string_view key) const {
  if (!has_properties()) return nullptr;
  for (const auto& p : props_) {
    if (p.key == key) return &p.value;
  }
  return nullptr;
}

std::optional<double> Amf0Value::find_number(std::string_view key) const {
  const Amf0Value* v = find(key);
  if (v && v->is_number()) return v->num_;
  return std::nullopt;
}

std::optional<std::string_view> Amf0Value::find_string(std::string_view key) const {
  const Amf0Value* v = find(key);
  if (v && v->is_string()) return std::string_view(v->str_);
  return std::nullopt;
}

std::optional<bool> Amf0Value::find_bool(std::string_view key) const {
  const Amf0Value* v = find(key);
  if (v && v->is_bool()) return v->bool_;
  return std::nullopt;
}

Amf0Value& Amf0Value::set(std::string_view key, Amf0Value v) {
  Properties& props = properties();
  for (auto& p : props) {
    if (p.key == key) {
      p.value = std::move(v);
      return p.value;
    }
  }
  props.push_back(Amf0Property{std::string(key), std::move(v)});
  return props.back().value;
}

void Amf0Value::push_back(Amf0Value v) { items().push_back(std::move(v)); }

bool operator==(const Amf0Value& a, const Amf0Value& b) {
  if (a.type_ != b.type_) return false;
  switch (a.type_) {
    case Amf0Value::Type::Null:
    case Amf0Value::Type::Undefined: return true;
    case Amf0Value::Type::Number: return a.num_ == b.num_ || (std::isnan(a.num_) && std::isnan(b.num_));
    case Amf0Value::Type::Boolean: return a.bool_ == b.bool_;
    case Amf0Value::Type::String: return a.str_ == b.str_;
    case Amf0Value::Type::Object:
    case Amf0Value::Type::EcmaArray: return a.props_ == b.props_;
    case Amf0Value::Type::StrictArray: return a.items_ == b.items_;
    case Amf0Value::Type::Date:
      return a.tz_ == b.tz_ && (a.num_ == b.num_ || (std::isnan(a.num_) && std::isnan(b.num_)));
  }
  return false;
}

namespace {

// Appends a rendering of v to out, stopping once out passes max_chars (the caller truncates).
void render(const Amf0Value& v, std::string& out, size_t max_chars, size_t depth) {
  if (out.size() > max_chars) return;
  if (depth > kAmf0MaxDepthCeiling) { out += "..."; return; }
  char num[40];
  switch (v.type()) {
    case Amf0Value::Type::Null: out += "null"; break;
    case Amf0Value::Type::Undefined: out += "undefined"; break;
    case Amf0Value::Type::Boolean: out += v.as_bool() ? "true" : "false"; break;
    case Amf0Value::Type::Number:
      std::snprintf(num, sizeof num, "%.17g", v.as_number());
      out += num;
      break;
    case Amf0Value::Type::Date:
      std::snprintf(num, sizeof num, "Date(%.17g)", v.date_ms());
      out += num;
      break;
    case Amf0Value::Type::String: {
      out += '"';
      const std::string& s = v.as_string();
      for (char c : s) {
        if (out.size() > max_chars) break;
        auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') { out += '\\'; out += c; }
        else if (u < 0x20 || u == 0x7f) { std::snprintf(num, sizeof num, "\\x%02x", u); out += num; }
        else out += c;
      }
      out += '"';
      break;
    }
    case Amf0Value::Type::Object:
    case Amf0Value::Type::EcmaArray: {
      out += v.is_ecma_array() ? "ecma{" : "{";
      bool first = true;
      for (const auto& p : v.properties()) {
        if (out.size() > max_chars) break;
        if (!first) out += ", ";
        first = false;
        out += p.key;
        out += ": ";
        render(p.value, out, max_chars, depth + 1);
      }
      out += '}';
      break;
    }
    case Amf0Value::Type::StrictArray: {
      out += '[';
      bool first = true;
      for (const auto& item : v.items()) {
        if (out.size() > max_chars) break;
        if (!first) out += ", ";
        first = false;
        render(item, out, max_chars, depth + 1);
      }
      out += ']';
      break;
    }
  }
}

}  // namespace

std::string Amf0Value::to_debug_string(size_t max_chars) const {
  std::string out;
  render(*this, out, max_chars, 0);
  if (out.size() > max_chars) {
    out.resize(max_chars);
    out += "...";
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Amf0Decoder

Amf0Decoder::Amf0Decoder(std::span<const uint8_t> data, Amf0Limits limits) : data_(data), limits_(limits) {
  limits_.max_depth = std::min(limits_.max_depth, kAmf0MaxDepthCeiling);
}

void Amf0Decoder::need(size_t n, const char* what) const {
  if (n > data_.size() - pos_) {
    throw ProtocolError("amf0: " + std::string(what) + " at offset " + std::to_string(pos_) + " needs " +
                        std::to_string(n) + " bytes, found " + std::to_string(data_.size() - pos_));
  }
}

uint8_t Amf0Decoder::read_u8(const char* what) {
  need(1, what);
  return data_[pos_++];
}

uint16_t Amf0Decoder::read_u16(const char* what) {
  need(2, what);
  uint16_t v = static_cast<uint16_t>((data_[pos_] << 8) | data_[pos_ + 1]);
  pos_ += 2;
  return v;
}

uint32_t Amf0Decoder::read_u32(const char* what) {
  need(4, what);
  uint32_t v = load_be32(data_.data() + pos_);
  pos_ += 4;
  return v;
}

// AMF0 §2.2: number-type = number-marker DOUBLE (IEEE 754 double, network byte order).
double Amf0Decoder::read_double(const char* what) {
  need(8, what);
  uint64_t bits = 0;
  for (int i = 0; i < 8; ++i) bits = (bits << 8) | data_[pos_ + i];
  pos_ += 8;
  return std::bit_cast<double>(bits);
}

std::string Amf0Decoder::read_utf8(size_t len, const char* what) {
  if (len > limits_.max_string) {
    throw ProtocolError("amf0: " + std::string(what) + " at offset " + std::to_string(pos_) + " of " +
                        std::to_string(len) + " bytes exceeds limit " + std::to_string(limits_.max_string));
  }
  need(len, what);
  std::string s(reinterpret_cast<const char*>(data_.data() + pos_), len);
  pos_ += len;
  return s;
}

void Amf0Decoder::count_element() {
  if (++total_elements_ > limits_.max_total_elements) {
    throw ProtocolError("amf0: more than " + std::to_string(limits_.max_total_elements) +
                        " values in one message (limit)");
  }
}

Amf0Value Amf0Decoder::decode() {
  if (at_end()) throw ProtocolError("amf0: expected a value marker, found end of data");
  return decode_value(0);
}

std::vector<Amf0Value> Amf0Decoder::decode_all() {
  std::vector<Amf0Value> values;
  while (!at_end()) values.push_back(decode_value(0));
  return values;
}

// AMF0 §2.5 object-property = (UTF-8 value-type) | (UTF-8-empty object-end-marker); the list
// ends with an empty key followed by the object-end marker 0x09 (§2.11).
void Amf0Decoder::decode_properties(Amf0Value::Properties& out, size_t depth, const char* what) {
  for (;;) {
    uint16_t key_len = read_u16("property name length");
    if (key_len == 0) {
      uint8_t m = read_u8("object-end marker");
      if (m != static_cast<uint8_t>(Amf0Marker::ObjectEnd)) {
        throw ProtocolError("amf0: " + std::string(what) + " at offset " + std::to_string(pos_ - 1) +
                            ": expected object-end marker 0x09 after empty name, found " + hex_byte(m));
      }
      return;
    }
    if (out.size() >= limits_.max_elements) {
      throw ProtocolError("amf0: " + std::string(what) + " has more than " +
                          std::to_string(limits_.max_elements) + " properties (limit)");
    }
    std::string key = read_utf8(key_len, "property name");
    Amf0Value value = decode_value(depth);
    out.push_back(Amf0Property{std::move(key), std::move(value)});
  }
}

// depth = number of containers enclosing the value being decoded.
Amf0Value Amf0Decoder::decode_value(size_t depth) {
  const size_t at = pos_;
  uint8_t marker = read_u8("value marker");
  count_element();

  switch (static_cast<Amf0Marker>(marker)) {
    case Amf0Marker::Number:
      return Amf0Value::number(read_double("number"));
    case Amf0Marker::Boolean:  // AMF0 §2.3: U8, 0 is false, anything else true
      return Amf0Value::boolean(read_u8("boolean") != 0);
    case Amf0Marker::String:  // AMF0 §2.4: U16 length + UTF-8
      return Amf0Value::string(read_utf8(read_u16("string length"), "string"));
    case Amf0Marker::LongString:  // AMF0 §2.14: U32 length + UTF-8
      return Amf0Value::string(read_utf8(read_u32("long string length"), "long string"));
    case Amf0Marker::XmlDocument:  // AMF0 §2.17: same layout as a long string
      return Amf0Value::string(read_utf8(read_u32("XML document length"), "XML document"));
    case Amf0Marker::Null:
      return Amf0Value::null();
    case Amf0Marker::Undefined:
    case Amf0Marker::Unsupported:  // AMF0 §2.15: marker only
      return Amf0Value::undefined();
    case Amf0Marker::Object:
    case Amf0Marker::TypedObject:
    case Amf0Marker::EcmaArray:
    case Amf0Marker::StrictArray:
      return decode_container(static_cast<Amf0Marker>(marker), at, depth);
    case Amf0Marker::Date: {
      // AMF0 §2.13: DOUBLE milliseconds since the epoch (UTC), then S16 time-zone (reserved, 0).
      double ms = read_double("date");
      auto tz = static_cast<int16_t>(read_u16("date time-zone"));
      return Amf0Value::date(ms, tz);
    }
    case Amf0Marker::ObjectEnd:
      throw ProtocolError("amf0: expected a value at offset " + std::to_string(at) +
                          ", found object-end marker 0x09 outside an object");
    case Amf0Marker::MovieClip:
    case Amf0Marker::Reference:
    case Amf0Marker::RecordSet:
    case Amf0Marker::AvmPlus:
      break;
  }
  throw ProtocolError("amf0: expected a supported type marker at offset " + std::to_string(at) + ", found " +
                      hex_byte(marker));
}

// Objects and arrays: the values that nest, so each one counts against the depth limit.
Amf0Value Amf0Decoder::decode_container(Amf0Marker marker, size_t at, size_t depth) {
  const char* what = marker == Amf0Marker::Object        ? "object"
                     : marker == Amf0Marker::TypedObject ? "typed object"
                     : marker == Amf0Marker::EcmaArray   ? "ECMA array"
                                                         : "strict array";
  if (depth + 1 > limits_.max_depth) {
    throw ProtocolError("amf0: " + std::string(what) + " at offset " + std::to_string(at) + " nests deeper than " +
                        std::to_string(limits_.max_depth) + " levels (limit)");
  }
  if (marker == Amf0Marker::StrictArray) return decode_strict_array(at, depth);
  Amf0Value v = marker == Amf0Marker::EcmaArray ? Amf0Value::ecma_array() : Amf0Value::object();
  if (marker == Amf0Marker::TypedObject) {  // AMF0 §2.18: class-name (UTF-8) then object properties
    (void)read_utf8(read_u16("typed object class name length"), "typed object class name");
  } else if (marker == Amf0Marker::EcmaArray) {
    // AMF0 §2.10: U32 associative-count, then properties up to the object end. The count is
    // advisory (encoders write 0 or the real count); the end marker is what terminates it.
    (void)read_u32("ECMA array count");
  }
  decode_properties(v.properties(), depth + 1, what);
  return v;
}

// AMF0 §2.12: U32 array-count then that many values.
Amf0Value Amf0Decoder::decode_strict_array(size_t at, size_t depth) {
  uint32_t count = read_u32("strict array count");
  if (count > limits_.max_elements) {
    throw ProtocolError("amf0: strict array at offset " + std::to_string(at) + " declares " + std::to_string(count) +
                        " items, limit " + std::to_string(limits_.max_elements));
  }
  if (count > remaining()) {  // every value is at least one byte
    throw ProtocolError("amf0: strict array at offset " + std::to_string(at) + " declares " + std::to_string(count) +
                        " items but only " + std::to_string(remaining()) + " bytes remain");
  }
  Amf0Value v = Amf0Value::strict_array();
  v.items().reserve(count);
  for (uint32_t i = 0; i < count; ++i) v.items().push_back(decode_value(depth + 1));
  return v;
}

// ---------------------------------------------------------------------------------------------
// Amf0Encoder

void Amf0Encoder::put(const void* p, size_t n) {
  auto* b = static_cast<const uint8_t*>(p);
  if (vec_) vec_->insert(vec_->end(), b, b + n);
  else str_->append(reinterpret_cast<const char*>(b), n);
}

void Amf0Encoder::put_u16(uint16_t v) {
  uint8_t b[2] = {static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)};
  put(b, 2);
}

void Amf0Encoder::put_u32(uint32_t v) {
  uint8_t b[4];
  store_be32(b, v);
  put(b, 4);
}

void Amf0Encoder::put_double(double v) {
  auto bits = std::bit_cast<uint64_t>(v);
  uint8_t b[8];
  for (int i = 7; i >= 0; --i) {
    b[i] = static_cast<uint8_t>(bits);
    bits >>= 8;
  }
  put(b, 8);
}

void Amf0Encoder::write_number(double v) {
  put_u8(static_cast<uint8_t>(Amf0Marker::Number));
  put_double(v);
}

void Amf0Encoder::write_bool(bool v) {
  put_u8(static_cast<uint8_t>(Amf0Marker::Boolean));
  put_u8(v ? 1 : 0);
}

void Amf0Encoder::write_string(std::string_view s) {
  if (s.size() <= 0xFFFF) {
    put_u8(static_cast<uint8_t>(Amf0Marker::String));
    put_u16(static_cast<uint16_t>(s.size()));
  } else {
    if (s.size() > 0xFFFFFFFFu) throw ProtocolError("amf0 encode: string of " + std::to_string(s.size()) +
                                                    " bytes exceeds the long-string maximum 4294967295");
    put_u8(static_cast<uint8_t>(Amf0Marker::LongString));
    put_u32(static_cast<uint32_t>(s.size()));
  }
  put(s.data(), s.size());
}

void Amf0Encoder::write_null() { put_u8(static_cast<uint8_t>(Amf0Marker::Null)); }
void Amf0Encoder::write_undefined() { put_u8(static_cast<uint8_t>(Amf0Marker::Undefined)); }

void Amf0Encoder::write_date(double ms_since_epoch, int16_t timezone) {
  put_u8(static_cast<uint8_t>(Amf0Marker::Date));
  put_double(ms_since_epoch);
  put_u16(static_cast<uint16_t>(timezone));
}

void Amf0Encoder::begin_object() { put_u8(static_cast<uint8_t>(Amf0Marker::Object)); }

void Amf0Encoder::begin_ecma_array(uint32_t count_hint) {
  put_u8(static_cast<uint8_t>(Amf0Marker::EcmaArray));
  put_u32(count_hint);
}

void Amf0Encoder::write_key(std::string_view key) {
  if (key.size() > 0xFFFF) {
    throw ProtocolError("amf0 encode: property name of " + std::to_string(key.size()) +
                        " bytes exceeds 65535");
  }
  if (key.empty()) {
    // An empty name would read back as the object end (AMF0 §2.11).
    throw ProtocolError("amf0 encode: empty property name is reserved for the object end");
  }
  put_u16(static_cast<uint16_t>(key.size()));
  put(key.data(), key.size());
}

void Amf0Encoder::end_object() {
  const uint8_t end[3] = {0x00, 0x00, static_cast<uint8_t>(Amf0Marker::ObjectEnd)};
  put(end, 3);
}

void Amf0Encoder::begin_strict_array(uint32_t count) {
  put_u8(static_cast<uint8_t>(Amf0Marker::StrictArray));
  put_u32(count);
}

void Amf0Encoder::write_properties(const Amf0Value::Properties& props, size_t depth) {
  for (const auto& p : props) {
    write_key(p.key);
    write_value(p.value, depth + 1);
  }
  end_object();
}

void Amf0Encoder::write_object(const Amf0Value& v) {
  begin_object();
  write_properties(v.properties(), 0);
}

void Amf0Encoder::write_ecma_array(const Amf0Value& v) {
  const auto& props = v.properties();
  begin_ecma_array(static_cast<uint32_t>(std::min<size_t>(props.size(), 0xFFFFFFFFu)));
  write_properties(props, 0);
}

void Amf0Encoder::write_value(const Amf0Value& v) { write_value(v, 0); }

void Amf0Encoder::write_value(const Amf0Value& v, size_t depth) {
  if (depth > kAmf0MaxDepthCeiling) {
    throw ProtocolError("amf0 encode: value nests deeper than " + std::to_string(kAmf0MaxDepthCeiling) +
                        " levels");
  }
  switch (v.type()) {
    case Amf0Value::Type::Null: write_null(); return;
    case Amf0Value::Type::Undefined: write_undefined(); return;
    case Amf0Value::Type::Number: write_number(v.as_number()); return;
    case Amf0Value::Type::Boolean: write_bool(v.as_bool()); return;
    case Amf0Value::Type::String: write_string(v.as_string()); return;
    case Amf0Value::Type::Date: write_date(v.date_ms(), v.date_timezone()); return;
    case Amf0Value::Type::Object:
      begin_object();
      write_properties(v.properties(), depth);
      return;
    case Amf0Value::Type::EcmaArray:
      begin_ecma_array(static_cast<uint32_t>(std::min<size_t>(v.properties().size(), 0xFFFFFFFFu)));
      write_properties(v.properties(), depth);
      return;
    case Amf0Value::Type::StrictArray: {
      const auto& items = v.items();
      if (items.size() > 0xFFFFFFFFu) throw ProtocolError("amf0 encode: strict array too long");
      begin_strict_array(static_cast<uint32_t>(items.size()));
      for (const auto& item : items) write_value(item, depth + 1);
      return;
    }
  }
}

std::vector<uint8_t> amf0_encode_all(std::span<const Amf0Value> values) {
  std::vector<uint8_t> out;
  Amf0Encoder enc(out);
  for (const auto& v : values) enc.write_value(v);
  return out;
}

}  // namespace rill::protocol
