#include "rill/core/access_line.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <vector>

namespace rill::core {
namespace {

const std::vector<std::string> kSecrets = {"sign", "token"};

// The UTC time of these lines: TZ is set for the process once.
std::time_t utc_time() {
  setenv("TZ", "UTC", 1);
  tzset();
  return 1796438609;  // 2026-12-05T02:43:29Z
}

TEST(AccessLine, RedactsConfiguredParameters) {
  EXPECT_EQ(redact_query("expires=9&sign=ab12", kSecrets), "expires=9&sign=REDACTED");
  EXPECT_EQ(redact_query("TOKEN=x&a=1&sign=", kSecrets), "TOKEN=REDACTED&a=1&sign=REDACTED");
  EXPECT_EQ(redact_query("signature=x&sign", kSecrets), "signature=x&sign");  // exact names only
  EXPECT_EQ(redact_query("", kSecrets), "");
  // Names are read as the token check reads them: percent-decoded.
  EXPECT_EQ(redact_query("%73ign=ab&sig%6E=cd&%s=1", kSecrets), "%73ign=REDACTED&sig%6E=REDACTED&%s=1");
  EXPECT_EQ(redact_target("/live/a.m3u8?expires=1&sign=zz", kSecrets),
            "/live/a.m3u8?expires=1&sign=REDACTED");
  EXPECT_EQ(redact_target("/live/a.m3u8", kSecrets), "/live/a.m3u8");
}

TEST(AccessLine, ReadableDurationAsNginxRtmp) {
  EXPECT_EQ(readable_duration(0), "0s");
  EXPECT_EQ(readable_duration(5999), "5s");
  EXPECT_EQ(readable_duration(61000), "1m 1s");
  EXPECT_EQ(readable_duration(3600000), "1h 0m 0s");
  EXPECT_EQ(readable_duration(90061000), "1d 1h 1m 1s");
}

TEST(AccessLine, SessionInNginxRtmpCombinedFormat) {
  SessionAccess a;
  a.peer = "127.0.0.1:50000";
  a.protocol = "rtmp";
  a.command = "publish";
  a.app = "live";
  a.name = "cam1";
  a.args = "expires=9&sign=REDACTED";
  a.bytes_in = 1234;
  a.bytes_out = 56;
  a.duration_ms = 65000;
  a.close_reason = "client closed";
  a.agent = "FMLE/3.0 (compatible; \"x\")";
  const std::string line = format_session_access(a, AccessFormat::Combined, utc_time());
  EXPECT_EQ(line,
            "127.0.0.1 [05/Dec/2026:02:43:29 +0000] PUBLISH \"live\" \"cam1\" \"expires=9&sign=REDACTED\" - "
            "1234 56 "
            "\"\" \"FMLE/3.0 (compatible; \\x22x\\x22)\" (1m 5s) rtmp \"client closed\"");
  // What an nginx-rtmp log parser matches (its combined format, as a regular expression).
  const std::regex nginx_rtmp(
      R"re(^(\S+) \[([^\]]+)\] (\S+) "([^"]*)" "([^"]*)" "([^"]*)" - (\d+) (\d+) "([^"]*)" "([^"]*)" \(([^)]*)\))re");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(line, m, nginx_rtmp));
  EXPECT_EQ(m[3], "PUBLISH");
  EXPECT_EQ(m[11], "1m 5s");

  a.peer = "[::1]:4000";
  a.command = "";
  EXPECT_EQ(format_session_access(a, AccessFormat::Combined, utc_time()).substr(0, 39),
            "::1 [05/Dec/2026:02:43:29 +0000] NONE \"");
}

TEST(AccessLine, SessionAsJson) {
  SessionAccess a;
  a.peer = "10.0.0.1:1";
  a.protocol = "http-flv";
  a.command = "play";
  a.app = "live";
  a.name = "cam1";
  a.bytes_out = 7;
  a.duration_ms = 1500;
  a.close_reason = "kicked";
  a.agent = "a\"\\\n\x01\xc3";
  EXPECT_EQ(
      format_session_access(a, AccessFormat::Json, utc_time()),
      R"({"time":"2026-12-05T02:43:29+0000","addr":"10.0.0.1","peer":"10.0.0.1:1","protocol":"http-flv",)"
      R"("command":"play","app":"live","name":"cam1","args":"","bytes_in":0,"bytes_out":7,"duration_ms":1500,)"
      R"("close_reason":"kicked","agent":"a\"\\\n\u0001\u00c3","referer":""})");
}

TEST(AccessLine, RequestInNginxHttpCombinedFormat) {
  RequestAccess a;
  a.peer = "127.0.0.1:9";
  a.protocol = "hls";
  a.method = "GET";
  a.target = "/live/a.m3u8?sign=REDACTED";
  a.version = "HTTP/1.1";
  a.status = 200;
  a.bytes_out = 300;
  a.duration_ms = 2;
  a.agent = "hls.js";
  EXPECT_EQ(
      format_request_access(a, AccessFormat::Combined, utc_time()),
      "127.0.0.1 - - [05/Dec/2026:02:43:29 +0000] \"GET /live/a.m3u8?sign=REDACTED HTTP/1.1\" 200 300 \"-\" "
      "\"hls.js\" 2ms hls");
  EXPECT_EQ(
      format_request_access(a, AccessFormat::Json, utc_time()),
      R"({"time":"2026-12-05T02:43:29+0000","addr":"127.0.0.1","peer":"127.0.0.1:9","protocol":"hls",)"
      R"("method":"GET","target":"/live/a.m3u8?sign=REDACTED","status":200,"bytes_out":300,"duration_ms":2,)"
      R"("agent":"hls.js","referer":""})");
}

}  // namespace
}  // namespace rill::core
