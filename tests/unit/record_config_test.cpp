// apps.NAME.record: parsing, defaults, errors (FILE:LINE:COL, did-you-mean) and the path template.
#include "rill/config/record_config.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <ctime>

#include "config_test_util.h"

namespace rill::config {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(RecordConfig, DefaultIsOff) {
  const Config c = load(kApps);
  const RecordConfig& r = c.apps.at("live").record;
  EXPECT_FALSE(r.enabled());
  EXPECT_EQ(r.format, RecordFormat::Fmp4);
  EXPECT_EQ(r.segment, milliseconds(0));
  EXPECT_EQ(r.max_size, 0u);
  EXPECT_EQ(r.flush, seconds(1));
  EXPECT_EQ(r.path, "/var/lib/rill/recordings/{app}/{name}/{start:%Y-%m-%d_%H-%M-%S}");
  EXPECT_FALSE(load_default_config().apps.at("live").record.enabled());
}

TEST(RecordConfig, AllKeys) {
  const Config c = load(kLive +
                        "    record:\n"
                        "      mode: video\n"
                        "      format: flv\n"
                        "      path: /srv/rec/{app}/{name}-{start:%H%M}\n"
                        "      segment: 10m\n"
                        "      max_size: 512MiB\n"
                        "      flush: 500ms\n"
                        "      retention: {max_age: 7d, max_bytes: 10GiB}\n");
  const RecordConfig& r = c.apps.at("live").record;
  EXPECT_EQ(r.retention.max_age, std::chrono::hours(7 * 24));
  EXPECT_EQ(r.retention.max_bytes, 10ull << 30);
  EXPECT_EQ(r.mode, RecordMode::Video);
  EXPECT_EQ(r.format, RecordFormat::Flv);
  EXPECT_EQ(r.path, "/srv/rec/{app}/{name}-{start:%H%M}");
  EXPECT_EQ(r.segment, seconds(600));
  EXPECT_EQ(r.max_size, 512u * 1024 * 1024);
  EXPECT_EQ(r.flush, milliseconds(500));
  EXPECT_EQ(load(kLive + "    record: {mode: audio}\n").apps.at("live").record.mode, RecordMode::Audio);
  EXPECT_EQ(load(kLive + "    record: {mode: all}\n").apps.at("live").record.mode, RecordMode::All);
  EXPECT_EQ(load(kLive + "    record: {mode: manual}\n").apps.at("live").record.mode, RecordMode::Manual);
}

TEST(RecordConfig, Errors) {
  EXPECT_CONTAINS(error_of(kLive + "    record: {mode: alll}\n"),
                  "t.yaml:3:20: apps.live.record.mode: expected one of off, all, video, audio, manual");
  EXPECT_CONTAINS(error_of(kLive + "    record: {fromat: flv}\n"),
                  "t.yaml:3:14: apps.live.record.fromat: unknown key; did you mean 'format'?");
  EXPECT_CONTAINS(error_of(kLive + "    record: {format: mp4}\n"),
                  "apps.live.record.format: expected one of fmp4, flv");
  EXPECT_CONTAINS(error_of(kLive + "    record: {segment: 500ms}\n"),
                  "apps.live.record.segment: must be 0s (one file per publish) or at least 1s");
  EXPECT_CONTAINS(error_of(kLive + "    record: {segment: 2x}\n"),
                  "expected a duration like 2s or 500ms, got '2x'");
  EXPECT_CONTAINS(error_of(kLive + "    record: {max_size: 4k}\n"), "must be 0 (no limit) or at least 1MiB");
  EXPECT_CONTAINS(error_of(kLive + "    record: {flush: 10ms}\n"), "apps.live.record.flush: must be between");
  EXPECT_CONTAINS(error_of(kLive + "    record: {retention: {max_age: 3651d}}\n"),
                  "apps.live.record.retention.max_age");
  EXPECT_CONTAINS(error_of(kLive + "    record: {retention: {max_bites: 0}}\n"), "did you mean 'max_bytes'?");
  EXPECT_CONTAINS(error_of(kLive + "    record: {path: '/r/{nmae}'}\n"),
                  "t.yaml:3:20: apps.live.record.path: unknown placeholder {nmae}: expected {app}, {name}, "
                  "{start} or {start:FORMAT}; did you mean {name}?");
  EXPECT_CONTAINS(error_of(kLive + "    record: {path: '/r/{app}'}\n"), "must contain {name}");
  EXPECT_CONTAINS(error_of(kLive + "    record: {path: 'r/{name}'}\n"), "must be an absolute path");
  EXPECT_CONTAINS(error_of(kLive + "    record: {path: '/r/{name}/'}\n"), "must not end with /");
  EXPECT_CONTAINS(error_of(kLive + "    record: {path: '/r/{name'}\n"), "unclosed '{' at offset 3");
  EXPECT_CONTAINS(error_of(kLive + "    record: {path: '/r/}{name}'}\n"), "unmatched '}' at offset 3");
  EXPECT_CONTAINS(error_of(kLive + "    record: {path: '/r/{name:x}'}\n"), "{name} takes no format");
  EXPECT_CONTAINS(error_of(kLive + "    record: {path: '/r/{name}{start:}'}\n"),
                  "{start:} needs a strftime format");
  EXPECT_CONTAINS(error_of(kLive + "    record: yes\n"), "apps.live.record: expected a map");
}

// /recordings/ serves the recording files before any app's route: an app of that name would
// never get its HLS nor its HTTP-FLV.
TEST(RecordConfig, AnAppNamedRecordingsIsAnErrorWhileFilesAreServed) {
  const std::string recordings = "  recordings: {}\n";
  EXPECT_CONTAINS(error_of(kLive + "    record: {mode: all}\n" + recordings),
                  "t.yaml:4:3: apps.recordings: app 'recordings' is unreachable: /recordings/ serves the "
                  "recording files (app 'live' records with record.serve on)");
  EXPECT_CONTAINS(error_of("apps:\n  recordings:\n    record: {mode: manual}\n"),
                  "app 'recordings' records with record.serve on");
  // Nothing served under /recordings/: the name is free.
  EXPECT_NO_THROW(load(kLive + recordings));
  EXPECT_NO_THROW(load(kLive + "    record: {mode: all, serve: false}\n" + recordings));
}

TEST(RecordPath, Expands) {
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  const std::time_t t = 1767225600 + 3600 + 120 + 3;  // 2026-01-01 01:02:03 UTC
  EXPECT_EQ(expand_record_path("/r/{app}/{name}/{start}", "live", "cam", t, ".mp4"),
            "/r/live/cam/2026-01-01_01-02-03.mp4");
  EXPECT_EQ(expand_record_path("/r/{name}-{start:%H%M}{{x}}", "live", "cam", t, ".flv"),
            "/r/cam-0102{x}.flv");
  EXPECT_TRUE(record_path_error("/r/{{name}}").has_value());  // a literal "{name}" is not the placeholder
  EXPECT_FALSE(record_path_error("/r/{app}/{name}/{start:%F}").has_value());
}

}  // namespace
}  // namespace rill::config
