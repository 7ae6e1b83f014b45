#pragma once
// Typed reading of a YAML document with precise errors. Every problem becomes a ConfigError whose
// what() is "SOURCE:LINE:COL: KEY.PATH: message" (line and column 1-based), and every map is
// checked for unknown keys, with a did-you-mean when one is a likely typo of a known key.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rill/config/config.h"

namespace rill::config {

// One node of the document, the key path that leads to it ("apps.live.hls", "rtmp.listen[1]";
// "" for the root) and the place an error about it points at.
struct YamlField {
  YAML::Node node;
  YAML::Mark mark;
  std::string path;
};

// The closest of `candidates` to `word` within edit distance 2 (a transposition counts as one
// edit), or "" when none is that close.
std::string closest_match(std::string_view word, const std::vector<std::string_view>& candidates);

class YamlReader {
 public:
  explicit YamlReader(std::string source_name) : source_name_(std::move(source_name)) {}
  const std::string& source_name() const { return source_name_; }

  // Parses `text`, which must hold at most one document (none reads as null). YAML syntax
  // errors become ConfigErrors at the place yaml-cpp reports.
  YamlField parse(const std::string& text) const;

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& path, const std::string& message) const;
  [[noreturn]] void fail(const YamlField& at, const std::string& message) const {
    fail(at.mark, at.path, message);
  }

  // The typed readers. Each fails with "expected ..., got ..." on a node of the wrong kind or
  // unparsable text, and with "must be ..." outside [min, max].
  bool boolean(const YamlField& f) const;  // true | false
  int64_t integer(const YamlField& f, int64_t min, int64_t max) const;
  Duration duration(const YamlField& f, Duration min, Duration max) const;
  size_t size(const YamlField& f, size_t min, size_t max) const;
  std::string string(const YamlField& f, bool allow_empty) const;
  std::optional<std::string> optional_string(const YamlField& f) const;  // null: nullopt
  std::string one_of(const YamlField& f, const std::vector<std::string_view>& choices) const;
  // A string or a list of strings; the fields of the strings, paths "key" or "key[i]".
  std::vector<YamlField> string_list(const YamlField& f) const;
  // A list of maps; each entry's field with its path "key[i]".
  std::vector<YamlField> map_list(const YamlField& f) const;

  // "a map", "a list", "null" or the scalar in quotes: for "expected X, got Y" messages.
  static std::string describe(const YAML::Node& node);

 private:
  std::string scalar(const YamlField& f, const std::string& expected) const;

  std::string source_name_;
};

// A map of the document with its keys checked. Keys must be distinct strings; with a non-empty
// `known` list, each key must be one of them. A null node reads as an empty map, so that
// `live:` and `live: {}` both mean "all defaults".
class YamlMap {
 public:
  struct Entry {
    std::string key;
    YAML::Mark key_mark;
    YamlField value;
  };

  YamlMap(const YamlReader& reader, YamlField field, std::vector<std::string_view> known = {});

  const YamlField& field() const { return field_; }
  const std::vector<Entry>& entries() const { return entries_; }  // in document order
  std::optional<YamlField> get(std::string_view key) const;
  // The path of a key of this map, for messages about a key that is absent.
  std::string path_of(std::string_view key) const;

  // Typed reads of optional keys: `out` is assigned when the key is present and keeps its
  // default otherwise.
  void read_bool(std::string_view key, bool& out) const;
  template <class Int>
  void read_int(std::string_view key, Int& out, int64_t min, int64_t max) const {
    if (auto f = get(key)) out = static_cast<Int>(reader_->integer(*f, min, max));
  }
  void read_duration(std::string_view key, Duration& out, Duration min, Duration max) const;
  void read_size(std::string_view key, size_t& out, size_t min, size_t max) const;
  void read_string(std::string_view key, std::string& out, bool allow_empty) const;
  void read_optional_string(std::string_view key, std::optional<std::string>& out) const;

 private:
  const YamlReader* reader_;
  YamlField field_;
  std::vector<Entry> entries_;
};

}  // namespace rill::config
