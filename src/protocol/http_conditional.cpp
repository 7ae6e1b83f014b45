#include "rill/protocol/http_conditional.h"

#include <ctime>
#include <optional>

namespace rill::protocol {

std::string http_date(int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char out[40];
  const size_t n = std::strftime(out, sizeof out, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return std::string(out, n);
}

namespace {

constexpr std::string_view kSpace = " \t";

std::string_view trimmed(std::string_view s) {
  const size_t a = s.find_first_not_of(kSpace);
  if (a == std::string_view::npos) return {};
  return s.substr(a, s.find_last_not_of(kSpace) - a + 1);
}

struct EntityTag {
  bool weak = false;
  std::string_view opaque;  // with its quotes
};

// One entity-tag at the start of `s`; false when there is none. `s` is left after it.
bool take_entity_tag(std::string_view& s, EntityTag& out) {
  out.weak = s.starts_with("W/");
  if (out.weak) s.remove_prefix(2);
  if (s.empty() || s.front() != '"') return false;
  const size_t close = s.find('"', 1);
  if (close == std::string_view::npos) return false;
  for (size_t i = 1; i < close; ++i) {  // etagc = %x21 / %x23-7E / obs-text
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x21 || c == 0x7f) return false;
  }
  out.opaque = s.substr(0, close + 1);
  s.remove_prefix(close + 1);
  return true;
}

constexpr std::string_view kDays[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
constexpr std::string_view kLongDays[] = {"Monday", "Tuesday",  "Wednesday", "Thursday",
                                          "Friday", "Saturday", "Sunday"};
constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

struct CivilTime {
  int64_t year = 0;
  int month = 0, day = 0, hour = 0, minute = 0, second = 0;  // month 1-12
};

// The HTTP-date grammar (§5.6.7) read left to right; each step false when the text does not follow.
class DateReader {
 public:
  explicit DateReader(std::string_view s) : s_(s) {}
  bool done() const { return s_.empty(); }
  bool literal(std::string_view l) {
    if (!s_.starts_with(l)) return false;
    s_.remove_prefix(l.size());
    return true;
  }
  template <size_t N>
  bool one_of(const std::string_view (&names)[N], int& index) {
    for (size_t i = 0; i < N; ++i) {
      if (literal(names[i])) {
        index = static_cast<int>(i);
        return true;
      }
    }
    return false;
  }
  bool digits(size_t n, int64_t& out) {
    if (s_.size() < n) return false;
    out = 0;
    for (size_t i = 0; i < n; ++i) {
      if (s_[i] < '0' || s_[i] > '9') return false;
      out = out * 10 + (s_[i] - '0');
    }
    s_.remove_prefix(n);
    return true;
  }
  bool number(size_t n, int& out) {
    int64_t v = 0;
    if (!digits(n, v)) return false;
    out = static_cast<int>(v);
    return true;
  }
  bool month(CivilTime& t) {
    if (!one_of(kMonths, t.month)) return false;
    ++t.month;  // 1-12
    return true;
  }
  // time-of-day = hour ":" minute ":" second
  bool time_of_day(CivilTime& t) {
    return number(2, t.hour) && literal(":") && number(2, t.minute) && literal(":") && number(2, t.second);
  }

 private:
  std::string_view s_;
};

// IMF-fixdate after "day-name, ": date1 = day SP month SP year, then SP time-of-day SP "GMT".
bool read_imf_fixdate(DateReader& r, CivilTime& t) {
  return r.number(2, t.day) && r.literal(" ") && r.month(t) && r.literal(" ") && r.digits(4, t.year) &&
         r.literal(" ") && r.time_of_day(t) && r.literal(" GMT");
}

// rfc850-date after "day-name-l, ": date2 = day "-" month "-" 2DIGIT, then SP time-of-day SP "GMT".
bool read_rfc850_date(DateReader& r, CivilTime& t) {
  if (!(r.number(2, t.day) && r.literal("-") && r.month(t) && r.literal("-") && r.digits(2, t.year)))
    return false;
  t.year += t.year >= 70 ? 1900 : 2000;
  return r.literal(" ") && r.time_of_day(t) && r.literal(" GMT");
}

// asctime-date after "day-name SP": date3 = month SP ( 2DIGIT / ( SP DIGIT ) ), then SP
// time-of-day SP year.
bool read_asctime_date(DateReader& r, CivilTime& t) {
  if (!(r.month(t) && r.literal(" "))) return false;
  if (!(r.literal(" ") ? r.number(1, t.day) : r.number(2, t.day))) return false;
  return r.literal(" ") && r.time_of_day(t) && r.literal(" ") && r.digits(4, t.year);
}

bool leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

// Days since 1970-01-01 of a proleptic Gregorian date (the civil-from-days inverse by eras of 400
// years).
int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

std::optional<int64_t> unix_time(const CivilTime& t) {
  static constexpr int kMonthDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (t.day < 1 || t.day > kMonthDays[t.month - 1] || (t.month == 2 && t.day == 29 && !leap(t.year)))
    return std::nullopt;
  // second = 2DIGIT (00-60: a leap second counts as the next one).
  if (t.hour > 23 || t.minute > 59 || t.second > 60) return std::nullopt;
  return days_from_civil(t.year, t.month, t.day) * 86400 + t.hour * 3600 + t.minute * 60 + t.second;
}

// The validator this server gave; its W/ does not count in a weak comparison.
EntityTag own_tag(std::string_view etag) {
  EntityTag t;
  std::string_view s = etag;
  if (!take_entity_tag(s, t) || !s.empty()) return EntityTag{};
  return t;
}

}  // namespace

bool if_none_match(std::string_view field, std::string_view etag) {
  std::string_view s = trimmed(field);
  if (s == "*") return true;
  const EntityTag own = own_tag(etag);
  if (own.opaque.empty()) return false;
  // #entity-tag (§5.6.1): elements separated by commas, empty ones allowed.
  while (!s.empty()) {
    s = trimmed(s);
    if (s.starts_with(',')) {
      s.remove_prefix(1);
      continue;
    }
    EntityTag t;
    if (!take_entity_tag(s, t)) return false;
    if (t.opaque == own.opaque) return true;
    s = trimmed(s);
    if (!s.empty() && s.front() != ',') return false;
  }
  return false;
}

std::optional<int64_t> parse_http_date(std::string_view text) {
  const std::string_view v = trimmed(text);
  CivilTime t;
  int day_name = 0;
  DateReader imf(v);
  if (imf.one_of(kDays, day_name) && imf.literal(", "))
    return read_imf_fixdate(imf, t) && imf.done() ? unix_time(t) : std::nullopt;
  DateReader rfc850(v);
  if (rfc850.one_of(kLongDays, day_name) && rfc850.literal(", "))
    return read_rfc850_date(rfc850, t) && rfc850.done() ? unix_time(t) : std::nullopt;
  DateReader asctime(v);
  if (asctime.one_of(kDays, day_name) && asctime.literal(" "))
    return read_asctime_date(asctime, t) && asctime.done() ? unix_time(t) : std::nullopt;
  return std::nullopt;
}

bool not_modified_since(std::string_view field, std::string_view last_modified) {
  const std::optional<int64_t> since = parse_http_date(field);
  const std::optional<int64_t> modified = parse_http_date(last_modified);
  return since && modified && *modified <= *since;
}

bool if_range_matches(std::string_view field, std::string_view etag, std::string_view last_modified) {
  const std::string_view v = trimmed(field);
  if (v.empty()) return false;
  if (v.front() == '"' || v.starts_with("W/")) {
    std::string_view s = v;
    EntityTag t;
    const EntityTag own = own_tag(etag);
    return take_entity_tag(s, t) && s.empty() && !t.weak && !own.weak && !own.opaque.empty() &&
           t.opaque == own.opaque;
  }
  return !last_modified.empty() && v == last_modified;
}

}  // namespace rill::protocol
