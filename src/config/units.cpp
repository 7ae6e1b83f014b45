// Duration and size syntax of the configuration file.
//
//   duration := DIGITS ("ms" | "s" | "m" | "h" | "d")  |  "0"
//   size     := DIGITS [ "B" | "K" | "k" | "KiB" | "M" | "m" | "MiB" | "G" | "g" | "GiB" ]
//
// The unit of a duration is mandatory (a bare "2" could mean seconds or milliseconds); only a bare
// "0" is accepted, since it means the same in every unit. All size units are binary (K = KiB =
// 1024); "KB", "MB", "GB" are refused because they read as powers of 1000 to half the audience.
#include "rill/config/units.h"

#include <charconv>
#include <cstdint>
#include <limits>
#include <string_view>
#include <system_error>

#include "rill/config/config.h"

namespace rill::config {
namespace {

struct Unit {
  std::string_view suffix;
  uint64_t factor;
};

constexpr Unit kDurationUnits[] = {
    {"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}};

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr uint64_t kGiB = 1024 * kMiB;
constexpr Unit kSizeUnits[] = {{"", 1},       {"B", 1},    {"K", kKiB},  {"k", kKiB},
                               {"KiB", kKiB}, {"M", kMiB}, {"m", kMiB},  {"MiB", kMiB},
                               {"G", kGiB},   {"g", kGiB}, {"GiB", kGiB}};

std::string quoted(std::string_view text) {
  std::string q;  // built piecewise: "'" + std::string&& trips GCC 12's -Wrestrict (PR105329)
  q.reserve(text.size() + 2);
  q += '\'';
  q += text;
  q += '\'';
  return q;
}

// Splits "123unit" into its number and its unit. Returns false when it does not start with a
// digit; sets `too_large` when the digits do not fit in 64 bits.
bool split_number(std::string_view text, uint64_t& number, std::string_view& unit, bool& too_large) {
  too_large = false;
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, number);
  if (ec == std::errc::result_out_of_range) {
    too_large = true;
    while (ptr != end && *ptr >= '0' && *ptr <= '9') ++ptr;
  } else if (ec != std::errc()) {
    return false;
  }
  unit = std::string_view(ptr, static_cast<size_t>(end - ptr));
  return true;
}

}  // namespace

Duration parse_duration(const std::string& text) {
  const std::string expected = "expected a duration like 2s or 500ms, got " + quoted(text);
  if (!text.empty() && text[0] == '-') {
    throw ConfigError("a duration cannot be negative, got " + quoted(text));
  }
  uint64_t number = 0;
  std::string_view unit;
  bool too_large = false;
  if (!split_number(text, number, unit, too_large)) throw ConfigError(expected);
  if (unit.empty()) {
    if (!too_large && number == 0) return Duration{0};
    throw ConfigError(expected + " (the unit is required: ms, s, m, h or d)");
  }
  for (const Unit& u : kDurationUnits) {
    if (u.suffix != unit) continue;
    constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<Duration::rep>::max());
    if (too_large || number > kMax / u.factor) {
      throw ConfigError("duration " + quoted(text) + " is too large");
    }
    return Duration{static_cast<Duration::rep>(number * u.factor)};
  }
  throw ConfigError(expected + " (units: ms, s, m, h, d)");
}

size_t parse_size(const std::string& text) {
  const std::string expected = "expected a size like 64KiB or 16MiB, got " + quoted(text);
  if (!text.empty() && text[0] == '-') {
    throw ConfigError("a size cannot be negative, got " + quoted(text));
  }
  uint64_t number = 0;
  std::string_view unit;
  bool too_large = false;
  if (!split_number(text, number, unit, too_large)) throw ConfigError(expected);
  for (const Unit& u : kSizeUnits) {
    if (u.suffix != unit) continue;
    constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<size_t>::max());
    if (too_large || number > kMax / u.factor) {
      throw ConfigError("size " + quoted(text) + " is too large");
    }
    return static_cast<size_t>(number * u.factor);
  }
  if (unit == "KB" || unit == "kB" || unit == "MB" || unit == "GB") {
    throw ConfigError("ambiguous size unit in " + quoted(text) + ": write " +
                      std::string(1, unit[0] == 'k' ? 'K' : unit[0]) + "iB (binary, 1024-based) instead");
  }
  throw ConfigError(expected + " (units: B, KiB, MiB, GiB)");
}

std::string format_duration(Duration d) {
  const auto ms = d.count();
  if (ms == 0) return "0s";
  for (auto it = std::rbegin(kDurationUnits); it != std::rend(kDurationUnits); ++it) {
    if (it->suffix == "d") continue;  // limits read in hours (24h), as the documentation writes them
    const auto factor = static_cast<Duration::rep>(it->factor);
    if (ms % factor == 0) return std::to_string(ms / factor) + std::string(it->suffix);
  }
  return std::to_string(ms) + "ms";  // unreachable: the factor of "ms" is 1
}

std::string format_size(size_t bytes) {
  constexpr Unit kShown[] = {{"GiB", kGiB}, {"MiB", kMiB}, {"KiB", kKiB}};
  if (bytes != 0) {
    for (const Unit& u : kShown) {
      if (bytes % u.factor == 0) return std::to_string(bytes / u.factor) + std::string(u.suffix);
    }
  }
  return std::to_string(bytes) + "B";
}

}  // namespace rill::config
