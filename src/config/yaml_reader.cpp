// Typed reading of YAML with "SOURCE:LINE:COL: KEY.PATH: message" errors.
#include "rill/config/yaml_reader.h"

#include <yaml-cpp/anchor.h>
#include <yaml-cpp/emitterstyle.h>
#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <sstream>

#include "rill/config/units.h"

namespace rill::config {
namespace {

// Optimal-string-alignment distance: Levenshtein plus adjacent transpositions.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::string join(const std::vector<std::string_view>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += ", ";
    out += w;
  }
  return out;
}

std::string child_path(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

// Where an error about `value` under `key` should point: the value itself, or the key when the
// value is null (yaml-cpp marks an empty value at the start of the next line).
YAML::Mark value_mark(const YAML::Node& key, const YAML::Node& value) {
  if (value.IsNull() || value.Mark().is_null()) return key.Mark();
  return value.Mark();
}

// Records where each document starts and ignores everything else.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> marks;

  void OnDocumentStart(const YAML::Mark& mark) override { marks.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
  }
  void OnMapEnd() override {}
};

}  // namespace

std::string closest_match(std::string_view word, const std::vector<std::string_view>& candidates) {
  constexpr size_t kMaxDistance = 2;
  std::string best;
  size_t best_distance = kMaxDistance + 1;
  for (const auto& candidate : candidates) {
    // The distance is at least the length difference: a long unknown key (or a fuzzer's) costs
    // nothing here instead of a quadratic table per known key.
    const size_t longer = std::max(word.size(), candidate.size());
    if (longer - std::min(word.size(), candidate.size()) > kMaxDistance) continue;
    const size_t distance = edit_distance(word, candidate);
    // A one- or two-letter word is within distance 2 of too much to be a useful hint.
    if (distance < best_distance && distance < std::max(word.size(), candidate.size()) - 1) {
      best = std::string(candidate);
      best_distance = distance;
    }
  }
  return best;
}

// ---- YamlReader ------------------------------------------------------------------------------

YamlField YamlReader::parse(const std::string& text) const {
  // Pass 1 counts the documents. YAML::LoadAll is not used: yaml-cpp up to 0.8 loops forever,
  // allocating, on a document that starts with a stray ',' (jbeder/yaml-cpp#1040, fixed by
  // #1319); a parser stuck that way starts every "next document" at the same place.
  DocumentStarts starts;
  YAML::Node root;
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    while (starts.marks.size() < 2 && parser.HandleNextDocument(starts)) {
    }
    if (starts.marks.size() == 2) {
      const YAML::Mark& second = starts.marks[1];
      if (second.pos == starts.marks[0].pos) {
        const auto pos = static_cast<size_t>(second.pos);
        const std::string found = pos < text.size() ? "'" + text.substr(pos, 1) + "'" : "text";
        fail(second, "", "YAML syntax error: unexpected " + found);
      }
      fail(second, "", "only one YAML document is allowed (found a second one)");
    }
    if (!starts.marks.empty()) root = YAML::Load(text);  // pass 2 builds the one document
  } catch (const YAML::Exception& e) {
    std::string message = "YAML syntax error: " + e.msg;
    if (e.msg.find("alias") != std::string::npos) {
      message += " (a value starting with * must be quoted, like \"*\" or \"*:1935\")";
    }
    fail(e.mark, "", message);
  }
  return YamlField{root, YAML::Mark(), ""};
}

void YamlReader::fail(const YAML::Mark& mark, const std::string& path, const std::string& message) const {
  std::string what = source_name_;
  if (!mark.is_null()) {
    what += ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
  }
  what += ": ";
  if (!path.empty()) what += path + ": ";
  what += message;
  throw ConfigError(what);
}

std::string YamlReader::describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar: {
      constexpr size_t kShown = 60;
      const std::string& s = node.Scalar();
      return "'" + (s.size() > kShown ? s.substr(0, kShown) + "..." : s) + "'";
    }
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return "null";
  }
  return "null";
}

std::string YamlReader::scalar(const YamlField& f, const std::string& expected) const {
  if (!f.node.IsScalar()) fail(f, "expected " + expected + ", got " + describe(f.node));
  return f.node.Scalar();
}

bool YamlReader::boolean(const YamlField& f) const {
  const std::string text = scalar(f, "true or false");
  if (text == "true") return true;
  if (text == "false") return false;
  fail(f, "expected true or false, got " + describe(f.node));
}

int64_t YamlReader::integer(const YamlField& f, int64_t min, int64_t max) const {
  const std::string text = scalar(f, "an integer");
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto result = std::from_chars(text.data(), end, value);
  if (result.ec == std::errc::result_out_of_range) fail(f, "integer " + text + " is out of range");
  if (result.ec != std::errc() || result.ptr != end) {
    fail(f, "expected an integer, got " + describe(f.node));
  }
  if (value < min || value > max) {
    fail(f, max == std::numeric_limits<int64_t>::max()
                ? "must be at least " + std::to_string(min) + ", got " + text
                : "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + text);
  }
  return value;
}

Duration YamlReader::duration(const YamlField& f, Duration min, Duration max) const {
  const std::string text = scalar(f, "a duration like 2s or 500ms");
  Duration value{};
  try {
    value = parse_duration(text);
  } catch (const ConfigError& e) {
    fail(f, e.what());
  }
  if (value < min || value > max) {
    fail(f, max == Duration::max() ? "must be at least " + format_duration(min) + ", got " + text
                                   : "must be between " + format_duration(min) + " and " +
                                         format_duration(max) + ", got " + text);
  }
  return value;
}

size_t YamlReader::size(const YamlField& f, size_t min, size_t max) const {
  const std::string text = scalar(f, "a size like 64KiB or 16MiB");
  size_t value = 0;
  try {
    value = parse_size(text);
  } catch (const ConfigError& e) {
    fail(f, e.what());
  }
  if (value < min || value > max) {
    fail(f, max == std::numeric_limits<size_t>::max()
                ? "must be at least " + format_size(min) + ", got " + text
                : "must be between " + format_size(min) + " and " + format_size(max) + ", got " + text);
  }
  return value;
}

std::string YamlReader::string(const YamlField& f, bool allow_empty) const {
  std::string text = scalar(f, "a string");
  if (!allow_empty && text.empty()) fail(f, "must not be empty");
  return text;
}

std::optional<std::string> YamlReader::optional_string(const YamlField& f) const {
  if (f.node.IsNull()) return std::nullopt;
  std::string text = scalar(f, "a string or null");
  if (text.empty()) fail(f, "must not be empty (write null for none)");
  return text;
}

std::string YamlReader::one_of(const YamlField& f, const std::vector<std::string_view>& choices) const {
  const std::string expected = "one of " + join(choices);
  std::string text = scalar(f, expected);
  if (std::find(choices.begin(), choices.end(), text) != choices.end()) return text;
  std::string message = "expected " + expected + "; got " + describe(f.node);
  std::string hint = closest_match(text, choices);
  for (const auto& choice : choices) {
    if (hint.empty() && text.size() > choice.size() && text.starts_with(choice)) hint = choice;
  }
  if (!hint.empty()) message += "; did you mean '" + hint + "'?";
  fail(f, message);
}

std::vector<YamlField> YamlReader::map_list(const YamlField& f) const {
  if (!f.node.IsSequence()) fail(f, "expected a list of maps, got " + describe(f.node));
  std::vector<YamlField> out;
  for (size_t i = 0; i < f.node.size(); ++i) {
    const YAML::Node n = f.node[i];
    out.push_back(
        YamlField{n, n.Mark().is_null() ? f.mark : n.Mark(), f.path + "[" + std::to_string(i) + "]"});
  }
  return out;
}

std::vector<YamlField> YamlReader::string_list(const YamlField& f) const {
  std::vector<YamlField> out;
  if (f.node.IsScalar()) {
    out.push_back(f);
    return out;
  }
  if (!f.node.IsSequence()) {
    fail(f, "expected a string or a list of strings, got " + describe(f.node));
  }
  for (size_t i = 0; i < f.node.size(); ++i) {
    const YAML::Node item = f.node[i];
    YamlField element{item, item.Mark().is_null() ? f.mark : item.Mark(),
                      f.path + "[" + std::to_string(i) + "]"};
    if (!item.IsScalar()) fail(element, "expected a string, got " + describe(item));
    out.push_back(std::move(element));
  }
  return out;
}

// ---- YamlMap ---------------------------------------------------------------------------------

YamlMap::YamlMap(const YamlReader& reader, YamlField field, std::vector<std::string_view> known)
    : reader_(&reader), field_(std::move(field)) {
  if (field_.node.IsNull()) return;
  if (!field_.node.IsMap()) {
    reader.fail(field_, "expected a map, got " + YamlReader::describe(field_.node));
  }
  for (auto it = field_.node.begin(); it != field_.node.end(); ++it) {
    // Copies: yaml-cpp's iterator hands out a temporary pair.
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) {
      reader.fail(key.Mark().is_null() ? field_.mark : key.Mark(), field_.path,
                  "expected a key name, got " + YamlReader::describe(key));
    }
    const std::string& name = key.Scalar();
    const std::string path = child_path(field_.path, name);
    for (const Entry& seen : entries_) {
      if (seen.key == name) reader.fail(key.Mark(), path, "duplicate key");
    }
    if (!known.empty() && std::find(known.begin(), known.end(), name) == known.end()) {
      const std::string hint = closest_match(name, known);
      reader.fail(key.Mark(), path,
                  hint.empty() ? "unknown key; expected one of " + join(known)
                               : "unknown key; did you mean '" + hint + "'?");
    }
    entries_.push_back(Entry{name, key.Mark(), YamlField{value, value_mark(key, value), path}});
  }
}

std::optional<YamlField> YamlMap::get(std::string_view key) const {
  for (const Entry& e : entries_) {
    if (e.key == key) return e.value;
  }
  return std::nullopt;
}

std::string YamlMap::path_of(std::string_view key) const { return child_path(field_.path, key); }

void YamlMap::read_bool(std::string_view key, bool& out) const {
  if (auto f = get(key)) out = reader_->boolean(*f);
}

void YamlMap::read_duration(std::string_view key, Duration& out, Duration min, Duration max) const {
  if (auto f = get(key)) out = reader_->duration(*f, min, max);
}

void YamlMap::read_size(std::string_view key, size_t& out, size_t min, size_t max) const {
  if (auto f = get(key)) out = reader_->size(*f, min, max);
}

void YamlMap::read_string(std::string_view key, std::string& out, bool allow_empty) const {
  if (auto f = get(key)) out = reader_->string(*f, allow_empty);
}

void YamlMap::read_optional_string(std::string_view key, std::optional<std::string>& out) const {
  if (auto f = get(key)) out = reader_->optional_string(*f);
}

}  // namespace rill::config
