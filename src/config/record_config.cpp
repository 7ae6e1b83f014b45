#include "rill/config/record_config.h"

#include <chrono>
#include <vector>

#include "rill/config/units.h"

namespace rill::config {

namespace {

using std::chrono::hours;
using std::chrono::milliseconds;

const std::vector<std::string_view> kRecordKeys = {"mode",     "format", "path",     "segment",
                                                   "max_size", "flush",  "retention", "serve"};
const std::vector<std::string_view> kRetentionKeys = {"max_age", "max_bytes"};
const std::vector<std::string_view> kModes = {"off", "all", "video", "audio", "manual"};
const std::vector<std::string_view> kFormats = {"fmp4", "flv"};
const std::vector<std::string_view> kPlaceholders = {"app", "name", "start"};
constexpr uint64_t kMiB = 1024 * 1024;

// One piece of a template: literal text, or a placeholder with its strftime format ({start:...}).
struct Piece {
  bool placeholder = false;
  std::string text;    // the literal, or the placeholder's name
  std::string format;  // {start}'s strftime format
};

// Splits a template; on a syntax error returns false with `error` set.
bool split(std::string_view path, std::vector<Piece>& out, std::string& error) {
  std::string literal;
  for (size_t i = 0; i < path.size(); ++i) {
    const char c = path[i];
    if ((c == '{' || c == '}') && i + 1 < path.size() && path[i + 1] == c) {
      literal += c;  // "{{" / "}}": a brace
      ++i;
      continue;
    }
    if (c == '}') {
      error = "unmatched '}' at offset " + std::to_string(i) + " (write }} for a brace)";
      return false;
    }
    if (c != '{') {
      literal += c;
      continue;
    }
    const size_t close = path.find('}', i);
    if (close == std::string_view::npos) {
      error = "unclosed '{' at offset " + std::to_string(i) + " (write {{ for a brace)";
      return false;
    }
    const std::string_view inside = path.substr(i + 1, close - i - 1);
    const size_t colon = inside.find(':');
    Piece p{true, std::string(inside.substr(0, colon)), {}};
    bool known = false;
    for (std::string_view k : kPlaceholders) known = known || p.text == k;
    if (!known) {
      error = "unknown placeholder {" + std::string(inside) +
              "}: expected {app}, {name}, {start} or {start:FORMAT}";
      const std::string near = closest_match(p.text, kPlaceholders);
      if (!near.empty()) error += "; did you mean {" + near + "}?";
      return false;
    }
    if (colon != std::string_view::npos) {
      if (p.text != "start") {
        error = "{" + p.text + "} takes no format (only {start:FORMAT} does)";
        return false;
      }
      p.format = std::string(inside.substr(colon + 1));
      if (p.format.empty()) {
        error = "{start:} needs a strftime format, e.g. {start:" + std::string(kRecordStartFormat) + "}";
        return false;
      }
    } else if (p.text == "start") {
      p.format = std::string(kRecordStartFormat);
    }
    if (!literal.empty()) out.push_back(Piece{false, std::move(literal), {}});
    literal.clear();
    out.push_back(std::move(p));
    i = close;
  }
  if (!literal.empty()) out.push_back(Piece{false, std::move(literal), {}});
  return true;
}

RecordRetention read_retention(const YamlReader& reader, const YamlField& f) {
  RecordRetention r;
  const YamlMap map(reader, f, kRetentionKeys);
  map.read_duration("max_age", r.max_age, milliseconds(0), hours(24 * 3650));
  size_t max_bytes = 0;
  map.read_size("max_bytes", max_bytes, 0, SIZE_MAX);
  r.max_bytes = max_bytes;
  return r;
}

}  // namespace

std::optional<std::string> record_path_error(std::string_view path) {
  if (path.empty()) return "must not be empty";
  if (path.front() != '/') return "must be an absolute path (starting with /)";
  if (path.back() == '/')
    return "names a file, not a directory: must not end with / (the extension is added)";
  std::vector<Piece> pieces;
  std::string error;
  if (!split(path, pieces, error)) return error;
  bool has_name = false;
  for (const Piece& p : pieces) has_name = has_name || (p.placeholder && p.text == "name");
  if (!has_name) return "must contain {name}: without it every stream of the app writes the same files";
  return std::nullopt;
}

std::string expand_record_path(std::string_view path, std::string_view app, std::string_view name,
                               std::time_t start, std::string_view extension) {
  std::vector<Piece> pieces;
  std::string error;
  split(path, pieces, error);
  std::tm local{};
  localtime_r(&start, &local);
  std::string out;
  for (const Piece& p : pieces) {
    if (!p.placeholder) {
      out += p.text;
    } else if (p.text == "app") {
      out += app;
    } else if (p.text == "name") {
      out += name;
    } else {
      char buf[256];
      const size_t n = std::strftime(buf, sizeof buf, p.format.c_str(), &local);
      out.append(buf, n);
    }
  }
  out += extension;
  return out;
}

std::string_view record_extension(RecordFormat format) {
  return format == RecordFormat::Flv ? ".flv" : ".mp4";
}

std::string_view to_string(RecordMode mode) {
  switch (mode) {
    case RecordMode::Off:
      return "off";
    case RecordMode::All:
      return "all";
    case RecordMode::Video:
      return "video";
    case RecordMode::Audio:
      return "audio";
    case RecordMode::Manual:
      return "manual";
  }
  return "?";
}

std::string_view to_string(RecordFormat format) { return format == RecordFormat::Flv ? "flv" : "fmp4"; }

void read_record(const YamlReader& reader, const YamlMap& app_map, AppConfig& app) {
  const auto field = app_map.get("record");
  if (!field) return;
  RecordConfig& rec = app.record;
  const YamlMap map(reader, *field, kRecordKeys);
  if (auto f = map.get("mode")) {
    const std::string mode = reader.one_of(*f, kModes);
    rec.mode = mode == "all"      ? RecordMode::All
               : mode == "video"  ? RecordMode::Video
               : mode == "audio"  ? RecordMode::Audio
               : mode == "manual" ? RecordMode::Manual
                                  : RecordMode::Off;
  }
  if (auto f = map.get("format"))
    rec.format = reader.one_of(*f, kFormats) == "flv" ? RecordFormat::Flv : RecordFormat::Fmp4;
  if (auto f = map.get("path")) {
    rec.path = reader.string(*f, /*allow_empty=*/false);
    if (auto why = record_path_error(rec.path)) reader.fail(*f, *why);
  }
  map.read_duration("segment", rec.segment, milliseconds(0), hours(24));
  if (rec.segment != Duration{0} && rec.segment < std::chrono::seconds(1)) {
    reader.fail(*map.get("segment"), "must be 0s (one file per publish) or at least 1s");
  }
  size_t max_size = 0;
  map.read_size("max_size", max_size, 0, SIZE_MAX);
  if (max_size != 0 && max_size < kMiB)
    reader.fail(*map.get("max_size"), "must be 0 (no limit) or at least 1MiB");
  rec.max_size = max_size;
  map.read_duration("flush", rec.flush, milliseconds(100), std::chrono::seconds(60));
  if (auto f = map.get("retention")) rec.retention = read_retention(reader, *f);
  map.read_bool("serve", rec.serve);
}

}  // namespace rill::config
