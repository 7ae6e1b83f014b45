#include "rill/process/upgrade_handoff.h"

#include <charconv>

namespace rill::process {

namespace {

constexpr size_t kMaxText = 64 * 1024;
constexpr size_t kMaxDescriptors = 1024;

// Splits on `sep`; empty pieces are kept (and refused by the callers where they matter).
std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    const size_t at = text.find(sep, start);
    out.push_back(text.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

template <typename Int>
bool parse_int(std::string_view s, Int* out) {
  if (s.empty() || s.size() > 10) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

bool parse_fd(std::string_view s, int* fd) { return parse_int(s, fd) && *fd >= 0; }

// Version strings and addresses carry no separator and nothing unprintable.
bool plain_text(std::string_view s) {
  for (unsigned char c : s)
    if (c <= ' ' || c >= 0x7f || c == ';' || c == '=') return false;
  return !s.empty() && s.size() <= 256;
}

}  // namespace

std::string encode_upgrade_handoff(const UpgradeHandoff& h) {
  // Appended piece by piece (GCC 12 warns falsely about `"," + std::to_string(...)`).
  std::string out;
  auto field = [&](const char* key, const std::string& value) {
    if (!out.empty()) out += ';';
    out.append(key).append("=").append(value);
  };
  auto list = [](std::string first, const std::vector<int>& fds) {
    for (int fd : fds) first.append(",").append(std::to_string(fd));
    return first;
  };
  field("link", std::to_string(h.link_version));
  if (!h.version.empty()) field("version", h.version);  // optional: for the logs only
  field("master", std::to_string(h.old_master));
  field("generation", std::to_string(h.generation));
  field("force", h.force ? "1" : "0");
  field("shm", list(std::to_string(h.ownership), {h.hls_memo, h.stream_totals, h.counters}));
  for (const auto& l : h.listeners) field("listen", list(l.kind + "," + l.address, l.fds));
  return out;
}

std::optional<UpgradeHandoff> parse_upgrade_handoff(std::string_view text, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<UpgradeHandoff> {
    if (error) *error = std::string(kUpgradeEnvironment) + ": " + why;
    return std::nullopt;
  };
  if (text.size() > kMaxText) return fail("longer than " + std::to_string(kMaxText) + " bytes");
  UpgradeHandoff h;
  bool have_link = false, have_master = false, have_shm = false;
  size_t descriptors = 0;
  for (std::string_view field : split(text, ';')) {
    const size_t eq = field.find('=');
    if (eq == std::string_view::npos)
      return fail("field without '=': '" + std::string(field.substr(0, 64)) + "'");
    const std::string_view key = field.substr(0, eq), value = field.substr(eq + 1);
    const std::string shown = std::string(field.substr(0, 64));
    if (key == "link") {
      if (!parse_int(value, &h.link_version)) return fail("bad link version in " + shown);
      have_link = true;
    } else if (key == "version") {
      if (!plain_text(value)) return fail("bad version in " + shown);
      h.version = std::string(value);
    } else if (key == "master") {
      if (!parse_int(value, &h.old_master) || h.old_master <= 0) return fail("bad master pid in " + shown);
      have_master = true;
    } else if (key == "generation") {
      if (!parse_int(value, &h.generation) || h.generation < 0) return fail("bad generation in " + shown);
    } else if (key == "force") {
      if (value != "0" && value != "1") return fail("bad force flag in " + shown);
      h.force = value == "1";
    } else if (key == "shm") {
      const auto fds = split(value, ',');
      if (fds.size() != 4 || !parse_fd(fds[0], &h.ownership) || !parse_fd(fds[1], &h.hls_memo) ||
          !parse_fd(fds[2], &h.stream_totals) || !parse_fd(fds[3], &h.counters))
        return fail("shm wants 4 descriptors: " + shown);
      have_shm = true;
    } else if (key == "listen") {
      const auto parts = split(value, ',');
      if (parts.size() < 3 || !plain_text(parts[0]) || !plain_text(parts[1]))
        return fail("listen wants a kind, an address and descriptors: " + shown);
      InheritedListener l{std::string(parts[0]), std::string(parts[1]), {}};
      for (size_t i = 2; i < parts.size(); ++i) {
        int fd = -1;
        if (!parse_fd(parts[i], &fd))
          return fail("bad descriptor '" + std::string(parts[i].substr(0, 16)) + "' in " + shown);
        if (++descriptors > kMaxDescriptors)
          return fail("more than " + std::to_string(kMaxDescriptors) + " descriptors");
        l.fds.push_back(fd);
      }
      h.listeners.push_back(std::move(l));
    } else {
      return fail("unknown field '" + std::string(key.substr(0, 32)) + "'");
    }
  }
  if (!have_link || !have_master || !have_shm) return fail("link, master and shm are required");
  return h;
}

std::optional<std::string> link_version_mismatch(uint32_t running, std::string_view running_build,
                                                 uint32_t ours, std::string_view our_build) {
  if (running == ours) return std::nullopt;
  return "the running rill " + std::string(running_build) + " speaks worker link version " +
         std::to_string(running) + ", this binary (rill " + std::string(our_build) + ") version " +
         std::to_string(ours);
}

}  // namespace rill::process
