#include "rill/server/token_command.h"

#include <cstring>
#include <ctime>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "rill/config/config.h"
#include "rill/media/stream_key.h"
#include "rill/protocol/stream_token.h"

namespace rill::server {

namespace {

constexpr const char* kUsage =
    "Usage: rill token (--secret S | --secret-file FILE) (--publish | --play) APP/NAME\n"
    "                  [--ttl DURATION (default 1h) | --expires UNIX_SECONDS]\n"
    "Prints expires=...&sign=...: append it after '?' to the stream name.\n";

struct TokenArgs {
  std::string secret;
  std::string action;
  std::string stream;
  int64_t expires = 0;
};

std::string read_secret_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// Throws std::runtime_error with what is wrong.
TokenArgs parse_args(int argc, char** argv) {
  TokenArgs a;
  std::optional<int64_t> expires;
  auto ttl = std::chrono::milliseconds(3600 * 1000);
  for (int i = 1; i < argc; ++i) {
    const std::string opt = argv[i];
    if (opt == "--publish" || opt == "--play") {
      if (!a.action.empty()) throw std::runtime_error("give one of --publish and --play");
      a.action = opt.substr(2);
      if (i + 1 >= argc) throw std::runtime_error(opt + " needs APP/NAME");
      a.stream = argv[++i];
      continue;
    }
    if (i + 1 >= argc) throw std::runtime_error("unknown option or missing value: " + opt);
    const std::string value = argv[++i];
    if (opt == "--secret") a.secret = value;
    else if (opt == "--secret-file") a.secret = read_secret_file(value);
    else if (opt == "--ttl") ttl = config::parse_duration(value);
    else if (opt == "--expires") expires = std::stoll(value);
    else throw std::runtime_error("unknown option " + opt);
  }
  if (a.secret.empty()) throw std::runtime_error("a secret is required (--secret or --secret-file)");
  if (a.action.empty()) throw std::runtime_error("--publish APP/NAME or --play APP/NAME is required");
  const auto now = static_cast<int64_t>(std::time(nullptr));
  a.expires = expires ? *expires : now + std::chrono::duration_cast<std::chrono::seconds>(ttl).count();
  return a;
}

}  // namespace

int run_token_command(int argc, char** argv, std::FILE* out, std::FILE* err) {
  TokenArgs a;
  try {
    a = parse_args(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(err, "rill token: %s\n%s", e.what(), kUsage);
    return 2;
  }
  std::string why;
  const auto key = media::StreamKey::parse(a.stream, &why);
  if (!key) {
    std::fprintf(err, "rill token: '%s' is not APP/NAME: %s\n", a.stream.c_str(), why.c_str());
    return 2;
  }
  std::fprintf(out, "%s\n", protocol::token_query(a.secret, a.action, key->app, key->name, a.expires).c_str());
  return 0;
}

}  // namespace rill::server
