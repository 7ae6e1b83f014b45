// Unit tests of rill-bench's pure parts: the command line, URLs, statistics and the report, the
// shared FLV source and its timestamp looping, and the stream scanners (HTTP responses, FLV tags,
// HLS playlists, TS framing). RTMP players read with protocol::ChunkReader's header-only mode,
// tested in chunk_stream_test.cpp; their session with protocol::RtmpClientSession, tested in
// rtmp_client_session_test.cpp.
//
// The unit-test binary links rill_lib but not the rill-bench sources (they only build the
// rill-bench executable), so the bench sources under test are compiled into this file by
// including them. They are pure code (no sockets, no event loop), so that is all they need.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "../../src/loadgen/av1_opus_source.cpp"
#include "../../src/loadgen/bench_options.cpp"
#include "../../src/loadgen/ertmp_tags.cpp"
#include "../../src/loadgen/flv_scanner.cpp"
#include "../../src/loadgen/flv_source.cpp"
#include "../../src/loadgen/hevc_source.cpp"
#include "../../src/loadgen/http_response.cpp"
#include "../../src/loadgen/m3u8.cpp"
#include "../../src/loadgen/stats.cpp"
#include "../../src/loadgen/url.cpp"
#include "rill/protocol/amf0.h"
#include "rill/protocol/flv_file.h"

namespace rill::loadgen {
namespace {

using protocol::ProtocolError;
constexpr int64_t kNsPerSec = 1'000'000'000;

ParseResult parse(std::initializer_list<const char*> args) {
  std::vector<std::string> v(args.begin(), args.end());
  return parse_options(v);
}

// ---------------------------------------------------------------- options

TEST(BenchOptions, RtmpPlayDefaults) {
  auto r = parse({"rtmp-play", "rtmp://127.0.0.1:1935/live/s", "-c", "1000"});
  ASSERT_TRUE(r.options) << r.error;
  const Options& o = *r.options;
  EXPECT_EQ(o.mode, Mode::RtmpPlay);
  EXPECT_EQ(o.connections, 1000);
  EXPECT_EQ(o.duration_s, 10);
  EXPECT_EQ(o.ramp, 200);
  EXPECT_EQ(o.threads, 1);
  EXPECT_FALSE(o.http10);
  EXPECT_EQ(o.url.host, "127.0.0.1");
  EXPECT_EQ(o.url.port, 1935);
  EXPECT_EQ(o.url.app, "live");
  EXPECT_EQ(o.url.stream, "s");
}

TEST(BenchOptions, AllOptionsAnyOrder) {
  auto r = parse({"rtmp-publish", "-c", "4", "-d", "2.5", "rtmp://h/live/s", "-i", "a.flv", "--ramp", "50",
                  "--threads", "2", "--setup-timeout", "3", "--quiet"});
  ASSERT_TRUE(r.options) << r.error;
  EXPECT_EQ(r.options->mode, Mode::RtmpPublish);
  EXPECT_EQ(r.options->connections, 4);
  EXPECT_DOUBLE_EQ(r.options->duration_s, 2.5);
  EXPECT_EQ(r.options->input, "a.flv");
  EXPECT_EQ(r.options->ramp, 50);
  EXPECT_EQ(r.options->threads, 2);
  EXPECT_EQ(r.options->setup_timeout_s, 3);
  EXPECT_FALSE(r.options->progress);
}

TEST(BenchOptions, HttpModes) {
  auto f = parse({"flv-play", "http://127.0.0.1:8080/live/s.flv", "-c", "10", "--http10"});
  ASSERT_TRUE(f.options) << f.error;
  EXPECT_EQ(f.options->mode, Mode::FlvPlay);
  EXPECT_TRUE(f.options->http10);
  EXPECT_EQ(f.options->url.path, "/live/s.flv");
  auto h = parse({"hls-play", "http://127.0.0.1:8080/live/s.m3u8"});
  ASSERT_TRUE(h.options) << h.error;
  EXPECT_EQ(h.options->mode, Mode::HlsPlay);
  EXPECT_EQ(h.options->connections, 1);
}

TEST(BenchOptions, Fanout) {
  auto r = parse({"fanout", "--publish", "rtmp://h:1936/live/s", "-i", "m.flv", "--rtmp-players", "100",
                  "--flv-url", "http://h:8080/live/s.flv", "--flv-players", "50", "-d", "5"});
  ASSERT_TRUE(r.options) << r.error;
  EXPECT_EQ(r.options->mode, Mode::Fanout);
  EXPECT_EQ(r.options->url.port, 1936);
  EXPECT_EQ(r.options->rtmp_players, 100);
  EXPECT_EQ(r.options->flv_players, 50);
  EXPECT_EQ(r.options->connections, 150);
  ASSERT_TRUE(r.options->flv_url);
  EXPECT_EQ(r.options->flv_url->path, "/live/s.flv");
  EXPECT_EQ(r.options->duration_s, 5);
}

TEST(BenchOptions, Help) {
  EXPECT_TRUE(parse({"--help"}).help);
  EXPECT_TRUE(parse({"rtmp-play", "-h"}).help);
  EXPECT_NE(usage().find("rtmp-publish"), std::string::npos);
}

TEST(BenchOptions, Errors) {
  struct Case {
    std::vector<std::string> args;
    const char* error_contains;
  };
  std::vector<Case> cases = {
      {{}, "missing MODE"},
      {{"rtmp-dance", "rtmp://h/a/s"}, "unknown mode"},
      {{"rtmp-play"}, "needs a URL"},
      {{"rtmp-play", "http://h/a/s"}, "rtmp://"},
      {{"flv-play", "rtmp://h/a/s"}, "http://"},
      {{"rtmp-play", "rtmp://h/onlyapp"}, "bad URL"},
      {{"rtmp-play", "rtmp://h:99999/a/s"}, "bad port"},
      {{"rtmp-play", "rtmp://h/a/s", "-c"}, "needs a value"},
      {{"rtmp-play", "rtmp://h/a/s", "-c", "ten"}, "non-negative integer"},
      {{"rtmp-play", "rtmp://h/a/s", "-c", "0"}, "at least 1"},
      {{"rtmp-play", "rtmp://h/a/s", "-d", "-1"}, "positive number"},
      {{"rtmp-play", "rtmp://h/a/s", "-d", "0"}, "positive number"},
      {{"rtmp-play", "rtmp://h/a/s", "--ramp", "x"}, "positive number"},
      {{"rtmp-play", "rtmp://h/a/s", "--threads", "0"}, "--threads"},
      {{"rtmp-play", "rtmp://h/a/s", "--frobnicate"}, "unknown option"},
      {{"rtmp-play", "rtmp://h/a/s", "rtmp://h/a/t"}, "unexpected argument"},
      {{"rtmp-play", "rtmp://h/a/s", "-i", "x.flv"}, "-i is for"},
      {{"rtmp-play", "rtmp://h/a/s", "--http10"}, "--http10"},
      {{"rtmp-publish", "rtmp://h/a/s"}, "needs -i"},
      {{"rtmp-publish", "rtmp://h/a/s", "-i", "m.flv", "--audio", "a.ogg"}, "goes with -i FILE.ivf"},
      {{"rtmp-play", "rtmp://h/a/s", "--rtmp-players", "3"}, "belong to fanout"},
      {{"fanout", "-i", "m.flv", "--rtmp-players", "3"}, "--publish"},
      {{"fanout", "rtmp://h/a/s", "--publish", "rtmp://h/a/s", "-i", "m.flv"}, "no positional"},
      {{"fanout", "--publish", "rtmp://h/a/s", "--rtmp-players", "3"}, "needs -i"},
      {{"fanout", "--publish", "rtmp://h/a/s", "-i", "m.flv"}, "--rtmp-players"},
      {{"fanout", "--publish", "rtmp://h/a/s", "-i", "m.flv", "-c", "3"}, "instead of -c"},
      {{"fanout", "--publish", "rtmp://h/a/s", "-i", "m.flv", "--flv-players", "3"}, "needs --flv-url"},
      {{"fanout", "--publish", "http://h/a/s", "-i", "m.flv", "--rtmp-players", "3"}, "rtmp://"},
  };
  for (const auto& c : cases) {
    auto r = parse_options(c.args);
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    EXPECT_FALSE(r.options) << joined;
    EXPECT_FALSE(r.help) << joined;
    EXPECT_NE(r.error.find(c.error_contains), std::string::npos) << joined << "-> " << r.error;
  }
}

// ---------------------------------------------------------------- URLs

TEST(BenchUrl, Rtmp) {
  std::string err;
  auto u = parse_url("rtmp://example.com/live/stream", &err);
  ASSERT_TRUE(u) << err;
  EXPECT_EQ(u->port, 1935);
  EXPECT_EQ(u->app, "live");
  EXPECT_EQ(u->stream, "stream");
  EXPECT_EQ(u->tc_url(), "rtmp://example.com/live");
  auto v = parse_url("rtmp://127.0.0.1:1936/app/inst/name?token=a/b", &err);
  ASSERT_TRUE(v) << err;
  EXPECT_EQ(v->app, "app/inst");
  EXPECT_EQ(v->stream, "name?token=a/b");
  EXPECT_EQ(v->tc_url(), "rtmp://127.0.0.1:1936/app/inst");
  auto w = parse_url("rtmp://[::1]:1937/live/s", &err);
  ASSERT_TRUE(w) << err;
  EXPECT_EQ(w->host, "::1");
  EXPECT_EQ(w->port, 1937);
  EXPECT_EQ(w->tc_url(), "rtmp://[::1]:1937/live");
  EXPECT_FALSE(parse_url("rtmp:///live/s", &err));
  EXPECT_FALSE(parse_url("rtmp://h/live/", &err));
  EXPECT_FALSE(parse_url("ftp://h/live/s", &err));
}

TEST(BenchUrl, StreamSuffix) {
  std::string err;
  auto u = *parse_url("rtmp://h:1935/live/s", &err);
  Url k = with_stream_suffix(u, 0);
  EXPECT_EQ(k.stream, "s_0");
  EXPECT_EQ(k.to_string(), "rtmp://h/live/s_0");
  auto q = *parse_url("rtmp://h/live/s?key=1", &err);
  EXPECT_EQ(with_stream_suffix(q, 12).stream, "s_12?key=1");
  auto h = *parse_url("http://h:8080/live/s.flv", &err);
  EXPECT_EQ(with_stream_suffix(h, 3).path, "/live/s_3.flv");
}

TEST(BenchUrl, ResolveReference) {
  std::string err;
  auto base = *parse_url("http://h:8080/live/s/index.m3u8?x=1", &err);
  EXPECT_EQ(resolve_reference(base, "seg-1.ts", &err)->path, "/live/s/seg-1.ts");
  EXPECT_EQ(resolve_reference(base, "/other/seg.ts", &err)->path, "/other/seg.ts");
  EXPECT_EQ(resolve_reference(base, "../a/b.ts?t=2", &err)->path, "/live/a/b.ts?t=2");
  EXPECT_EQ(resolve_reference(base, "./c.ts", &err)->path, "/live/s/c.ts");
  auto abs = resolve_reference(base, "http://other:81/x.ts", &err);
  ASSERT_TRUE(abs);
  EXPECT_EQ(abs->host, "other");
  EXPECT_EQ(abs->port, 81);
  EXPECT_EQ(abs->path, "/x.ts");
}

// ---------------------------------------------------------------- statistics

TEST(BenchStats, PercentileNearestRank) {
  std::vector<double> v;
  EXPECT_FALSE(percentile(v, 50));
  for (int i = 100; i >= 1; --i) v.push_back(i);  // 1..100, unsorted
  EXPECT_EQ(*percentile(v, 50), 50);
  EXPECT_EQ(*percentile(v, 99), 99);
  EXPECT_EQ(*percentile(v, 100), 100);
  EXPECT_EQ(*percentile(v, 0.5), 1);
  std::vector<double> one{7};
  EXPECT_EQ(*percentile(one, 99), 7);
  std::vector<double> two{10, 20};
  EXPECT_EQ(*percentile(two, 50), 10);
  EXPECT_EQ(*percentile(two, 99), 20);
  auto s = summarize({3, 1, 2});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->p50, 2);
  EXPECT_EQ(s->p99, 3);
  EXPECT_EQ(s->max, 3);
  EXPECT_TRUE(to_json(std::nullopt).is_null());
}

TEST(BenchStats, HistogramBuckets) {
  // Monotonic, exact below 1024 us, and each bucket's value within 0.2 % of what it holds.
  size_t prev = 0;
  for (uint64_t us : {0ull, 1ull, 500ull, 1023ull, 1024ull, 1025ull, 2047ull, 2048ull, 40000ull, 123456ull,
                      10'000'000ull, 3'000'000'000ull}) {
    size_t b = LatencyHistogram::bucket_of(us);
    EXPECT_GE(b, prev) << us;
    prev = b;
    uint64_t rep = LatencyHistogram::bucket_value_us(b);
    EXPECT_GE(rep, us) << us;
    EXPECT_LE(double(rep - us), 0.002 * double(us) + 0.5) << us;
    if (us < 1024) {
      EXPECT_EQ(rep, us);
    }
  }
}

TEST(BenchStats, HistogramPercentilesAndMerge) {
  LatencyHistogram a, b;
  EXPECT_FALSE(a.summary_ms());
  for (int i = 1; i <= 100; ++i) a.add_ns(int64_t(i) * 1'000'000);  // 1..100 ms
  b.add_ns(500'000'000);                                            // 500 ms
  a.merge(b);
  EXPECT_EQ(a.count(), 101u);
  auto s = a.summary_ms();
  ASSERT_TRUE(s);
  EXPECT_NEAR(s->p50, 51, 51 * 0.002 + 0.001);
  EXPECT_NEAR(s->p99, 100, 100 * 0.002 + 0.001);
  EXPECT_DOUBLE_EQ(s->max, 500);
}

TEST(BenchStats, RecordGapsAndRate) {
  ClientRecord r;
  const int64_t s = 1'000'000'000;
  r.streaming_ns = s;
  r.on_bytes(1000, s + 100);
  r.on_media(s + 100);
  r.on_media(s + 200'000'000);          // gap 200 ms
  r.on_media(s + 1'700'000'000);        // gap 1500 ms
  r.on_bytes(1000, s + 2'000'000'000);  // steady-state mark: 2 s after streaming
  EXPECT_EQ(r.mark_ns, s + 2'000'000'000);
  EXPECT_EQ(r.mark_bytes, 2000u);
  r.on_bytes(1'000'000, s + 3'000'000'000);
  r.on_media(s + 3'000'000'000);
  EXPECT_EQ(r.longest_gap_ns, 1'500'000'000);
  r.finish(s + 6'000'000'000);  // still open: 3 s since the last media
  EXPECT_EQ(r.longest_gap_ns, 3'000'000'000);
  // 1 MB over the 4 s after the mark.
  EXPECT_NEAR(*r.rate_mbps(s + 6'000'000'000), 2.0, 1e-9);
  ClientRecord never;
  EXPECT_FALSE(never.rate_mbps(s));
}

TEST(BenchStats, SteadyMbpsExcludesTheFirstTwoSeconds) {
  const int64_t t0 = 5 * kNsPerSec;
  std::vector<std::pair<int64_t, uint64_t>> samples;
  // A burst of 10 MB in the first second, then 1 MB/s.
  samples.emplace_back(t0 + 1 * kNsPerSec, 10'000'000);
  for (int i = 2; i <= 10; ++i)
    samples.emplace_back(t0 + i * kNsPerSec, 10'000'000 + uint64_t(i - 1) * 1'000'000);
  EXPECT_NEAR(steady_mbps(samples, t0), 8.0, 1e-9);
  // A run shorter than 2.5 s: the whole run.
  std::vector<std::pair<int64_t, uint64_t>> short_run{{t0 + kNsPerSec, 1'000'000},
                                                      {t0 + 2 * kNsPerSec, 2'000'000}};
  EXPECT_NEAR(steady_mbps(short_run, t0), 8.0, 1e-9);
  EXPECT_EQ(steady_mbps({}, t0), 0);
}

TEST(BenchStats, ReportCountsAndFields) {
  ReportInput in;
  in.mode = "rtmp-play";
  in.url = "rtmp://h/live/s";
  in.target = 4;
  in.start_ns = 0;
  in.end_ns = 10 * kNsPerSec;
  auto player = [](int64_t play, int64_t first_video, int64_t first_key) {
    ClientRecord r;
    r.start_ns = play - 1'000'000;
    r.play_ns = play;
    r.streaming_ns = play + 1'000'000;
    r.first_video_ns = first_video;
    r.first_key_ns = first_key;
    r.video = 100;
    r.audio = 200;
    r.bytes = 1'000'000;
    return r;
  };
  ClientRecord ok1 = player(kNsPerSec, kNsPerSec + 50'000'000, kNsPerSec + 60'000'000);
  ok1.on_media(2 * kNsPerSec);
  ok1.on_media(3 * kNsPerSec + 500'000'000);  // 1.5 s gap: a stall
  ClientRecord ok2 = player(kNsPerSec, kNsPerSec + 10'000'000, kNsPerSec + 20'000'000);
  ok2.on_media(9 * kNsPerSec);
  ClientRecord dropped = player(kNsPerSec, 0, 0);
  dropped.dropped = true;
  dropped.closed_ns = 5 * kNsPerSec;
  dropped.video = 0;
  ClientRecord failed;
  failed.failed = true;
  ClientRecord publisher;  // not a player: not counted in rtmp-play
  publisher.kind = ClientRecord::Kind::Publisher;
  publisher.streaming_ns = 1;
  for (auto* r : {&ok1, &ok2, &dropped, &failed, &publisher}) {
    r->finish(in.end_ns);
    in.records.push_back(*r);
  }
  in.errors["eof"] = 1;
  in.errors["connect_refused"] = 1;
  in.cpu_user_s = 1.23456;
  in.byte_samples = {{kNsPerSec, 0}, {2 * kNsPerSec, 1'000'000}, {10 * kNsPerSec, 9'000'000}};
  nlohmann::json j = build_report(in);
  EXPECT_EQ(j["mode"], "rtmp-play");
  EXPECT_EQ(j["connections"]["target"], 4);
  EXPECT_EQ(j["connections"]["ok"], 2);
  EXPECT_EQ(j["connections"]["failed"], 1);
  EXPECT_EQ(j["connections"]["dropped"], 1);
  EXPECT_EQ(j["connections"]["with_video"], 2);
  EXPECT_DOUBLE_EQ(j["mbps"].get<double>(), 8.0);
  EXPECT_EQ(j["first_video_ms"]["p50"], 10.0);
  EXPECT_EQ(j["first_video_ms"]["max"], 50.0);
  EXPECT_EQ(j["first_keyframe_ms"]["max"], 60.0);
  EXPECT_EQ(j["longest_gap_ms"], 6500.0);  // ok1: from 3.5 s to the end of the run
  EXPECT_EQ(j["stalls"], 1);               // ok1 (ok2: 1 s from 9 s to 10 s is not > 1 s)
  EXPECT_TRUE(j["latency_ms"].is_null());
  EXPECT_EQ(j["errors"]["eof"], 1);
  EXPECT_EQ(j["frames"]["video"], 200);
  EXPECT_EQ(j["frames"]["audio"], 600);
  EXPECT_EQ(j["cpu"]["user_s"], 1.235);
  for (const char* k : {"min_mbps", "p50_mbps", "max_mbps"}) EXPECT_TRUE(j["rate_spread"].contains(k)) << k;
  for (const char* k :
       {"mode", "url", "connections", "mbps", "rate_spread", "first_video_ms", "first_keyframe_ms",
        "longest_gap_ms", "stalls", "latency_ms", "errors", "frames", "cpu"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  in.latency.emplace();
  in.latency->add_ns(20'000'000);
  EXPECT_EQ(build_report(in)["latency_ms"]["max"], 20.0);
}

// ---------------------------------------------------------------- FLV source

BufferRef bytes(std::initializer_list<uint8_t> b) {
  return SharedBuffer::copy_of(std::span<const uint8_t>(b.begin(), b.size()));
}

SourceTag tag(uint8_t type, uint32_t ts, BufferRef body) {
  SourceTag t;
  t.type = type;
  t.timestamp = ts;
  t.body = std::move(body);
  return t;
}

BufferRef metadata_body() {
  std::vector<uint8_t> v;
  protocol::Amf0Encoder e(v);
  e.write_string("onMetaData");
  e.begin_ecma_array(1);
  e.write_key("duration");
  e.write_number(1);
  e.end_object();
  return SharedBuffer::copy_of(std::span<const uint8_t>(v));
}

std::vector<SourceTag> sample_tags() {
  // A file whose media starts at 1000 ms: metadata, AVC + AAC sequence headers, then
  // keyframe, audio, inter frame, a repeated sequence header, audio, inter frame.
  return {
      tag(18, 0, metadata_body()),
      tag(9, 1000, bytes({0x17, 0x00, 0, 0, 0, 1, 2, 3})),  // AVC sequence header
      tag(8, 1000, bytes({0xAF, 0x00, 0x12, 0x10})),        // AAC sequence header
      tag(9, 1000, bytes({0x17, 0x01, 0, 0, 0, 9, 9})),     // keyframe
      tag(8, 1010, bytes({0xAF, 0x01, 7})),
      tag(9, 1040, bytes({0x27, 0x01, 0, 0, 0, 9})),        // inter frame
      tag(9, 1040, bytes({0x17, 0x00, 0, 0, 0, 1, 2, 3})),  // repeated config: dropped
      tag(8, 1033, bytes({0xAF, 0x01, 8})),
      tag(9, 1080, bytes({0x27, 0x01, 0, 0, 0, 9})),
  };
}

TEST(BenchFlvSource, PreambleAndRebasing) {
  auto src = FlvSource::from_tags(sample_tags());
  ASSERT_EQ(src->preamble().size(), 3u);
  EXPECT_EQ(src->preamble()[0].type, 18);
  EXPECT_EQ(src->preamble()[1].type, 9);
  EXPECT_EQ(src->preamble()[2].type, 8);
  const auto& m = src->media();
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0].timestamp, 0u);
  EXPECT_TRUE(m[0].keyframe);
  EXPECT_EQ(m[1].timestamp, 10u);
  EXPECT_EQ(m[2].timestamp, 40u);
  EXPECT_FALSE(m[2].keyframe);
  EXPECT_EQ(m[3].timestamp, 40u);  // 33 in the file: never backwards
  EXPECT_EQ(m[4].timestamp, 80u);
  // Span 80 + the mean video interval (40).
  EXPECT_EQ(src->loop_duration_ms(), 120u);
}

TEST(BenchFlvSource, CursorLoopsWithIncreasingTimestamps) {
  auto src = FlvSource::from_tags(sample_tags());
  FlvCursor c(src);
  ASSERT_FALSE(c.empty());
  std::vector<uint32_t> ts;
  uint32_t prev = 0;
  for (int i = 0; i < 5 * 3; ++i) {
    ts.push_back(c.timestamp());
    EXPECT_GE(c.timestamp(), prev) << i;
    EXPECT_EQ(c.due_ms(), c.timestamp());
    prev = c.timestamp();
    c.advance();
  }
  EXPECT_EQ(c.pass(), 3u);
  std::vector<uint32_t> want = {0, 10, 40, 40, 80, 120, 130, 160, 160, 200, 240, 250, 280, 280, 320};
  EXPECT_EQ(ts, want);
  // Video timestamps are strictly increasing across passes (the fanout key).
  FlvCursor v(src);
  int64_t last_video = -1;
  for (int i = 0; i < 50; ++i) {
    if (v.tag().type == 9) {
      EXPECT_GT(int64_t(v.timestamp()), last_video);
      last_video = v.timestamp();
    }
    v.advance();
  }
}

TEST(BenchFlvSource, LoadsAFile) {
  auto path =
      std::filesystem::temp_directory_path() / ("rill_bench_test_" + std::to_string(::getpid()) + ".flv");
  {
    std::ofstream out(path, std::ios::binary);
    auto h = protocol::flv_file_header(true, true);
    out.write(reinterpret_cast<const char*>(h.data()), h.size());
    for (const auto& t : sample_tags()) {
      auto b = protocol::serialize_flv_tag(t.type, t.timestamp, t.body.span());
      out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    }
  }
  auto src = FlvSource::load(path.string());
  EXPECT_EQ(src->preamble().size(), 3u);
  EXPECT_EQ(src->media().size(), 5u);
  EXPECT_EQ(src->loop_duration_ms(), 120u);
  EXPECT_GT(src->bitrate_bps(), 0);
  std::filesystem::remove(path);
  EXPECT_THROW(FlvSource::load(path.string()), std::runtime_error);
}

// ---------------------------------------------------------------- helpers

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

// ---------------------------------------------------------------- HTTP responses

struct HttpCollect : HttpResponseParser::Sink {
  int status = 0;
  std::string body;
  int completes = 0;
  HttpHead head;
  void on_head(const HttpHead& h) override {
    status = h.status;
    head = h;
  }
  void on_body(std::span<const uint8_t> b) override {
    body.append(reinterpret_cast<const char*>(b.data()), b.size());
  }
  void on_complete() override { ++completes; }
};

std::span<const uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(BenchHttp, ChunkedByteByByte) {
  std::string r =
      "HTTP/1.1 200 OK\r\nContent-Type: video/x-flv\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n1a;ext=1\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: 1\r\n\r\n";
  HttpResponseParser p;
  HttpCollect c;
  size_t used = 0;
  for (size_t i = 0; i < r.size(); ++i) used += p.feed(as_bytes(r).subspan(i, 1), c);
  EXPECT_EQ(used, r.size());
  EXPECT_EQ(c.status, 200);
  EXPECT_EQ(*c.head.find("content-type"), "video/x-flv");
  EXPECT_TRUE(p.chunked());
  EXPECT_TRUE(p.keep_alive());
  EXPECT_EQ(c.body, "helloabcdefghijklmnopqrstuvwxyz");
  EXPECT_EQ(c.completes, 1);
}

TEST(BenchHttp, ContentLengthKeepAliveAndLeftover) {
  std::string r = "HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\n";
  HttpResponseParser p;
  HttpCollect c;
  size_t used = p.feed(as_bytes(r), c);
  EXPECT_EQ(used, r.find("abc") + 3);  // the next response is not consumed
  EXPECT_EQ(c.status, 404);
  EXPECT_EQ(c.body, "abc");
  EXPECT_TRUE(p.complete());
  EXPECT_TRUE(p.keep_alive());
}

TEST(BenchHttp, CloseDelimitedHttp10) {
  std::string r = "HTTP/1.0 200 OK\r\nContent-Type: video/x-flv\r\n\r\nFLV...";
  HttpResponseParser p;
  HttpCollect c;
  p.feed(as_bytes(r), c);
  EXPECT_FALSE(p.keep_alive());
  EXPECT_EQ(c.body, "FLV...");
  EXPECT_EQ(c.completes, 0);
  p.on_eof(c);
  EXPECT_EQ(c.completes, 1);
}

TEST(BenchHttp, Errors) {
  HttpCollect c;
  for (std::string bad : {"SPDY/3 200 OK\r\n\r\n", "HTTP/1.1 2x0 OK\r\n\r\n",
                          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                          "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n"}) {
    HttpResponseParser p;
    EXPECT_THROW(p.feed(as_bytes(bad), c), std::runtime_error) << bad;
  }
  HttpResponseParser p;
  p.feed(as_bytes("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"), c);
  EXPECT_THROW(p.on_eof(c), std::runtime_error);  // cut short
}

// ---------------------------------------------------------------- FLV stream scanner

struct TagCollect : FlvScanner::Sink {
  std::vector<ScannedTag> tags;
  std::vector<std::vector<uint8_t>> heads;
  void on_tag(const ScannedTag& t) override {
    tags.push_back(t);
    heads.emplace_back(t.head.begin(), t.head.end());
  }
};

TEST(BenchFlvScanner, ScansTags) {
  std::vector<uint8_t> wire;
  auto h = protocol::flv_file_header(true, true);
  wire.insert(wire.end(), h.begin(), h.end());
  auto add = [&](uint8_t type, uint32_t ts, std::vector<uint8_t> body) {
    auto b = protocol::serialize_flv_tag(type, ts, body);
    wire.insert(wire.end(), b.data(), b.data() + b.size());
  };
  add(18, 0, {2, 0, 10});
  add(9, 0x01020304, pattern(100, 9));  // timestamp with the extended byte
  add(8, 7, {0xAF, 1});
  add(9, 8, {});
  for (size_t step : {size_t(1), size_t(5), wire.size()}) {
    FlvScanner sc;
    TagCollect c;
    for (size_t i = 0; i < wire.size(); i += step) {
      sc.feed(std::span<const uint8_t>(wire).subspan(i, std::min(step, wire.size() - i)), c);
    }
    ASSERT_EQ(c.tags.size(), 4u) << step;
    EXPECT_EQ(c.tags[0].type, 18);
    EXPECT_EQ(c.tags[1].type, 9);
    EXPECT_EQ(c.tags[1].timestamp, 0x01020304u);
    EXPECT_EQ(c.tags[1].size, 100u);
    auto p = pattern(100, 9);
    EXPECT_EQ(c.heads[1], std::vector<uint8_t>(p.begin(), p.begin() + 16));
    EXPECT_EQ(c.heads[2], (std::vector<uint8_t>{0xAF, 1}));
    EXPECT_EQ(c.tags[3].size, 0u);
  }
  FlvScanner bad;
  TagCollect c;
  std::vector<uint8_t> garbage = {'F', 'L', 'X', 1, 5, 0, 0, 0, 9};
  EXPECT_THROW(bad.feed(garbage, c), ProtocolError);
}

// ---------------------------------------------------------------- HLS

TEST(BenchHls, MediaPlaylist) {
  auto m = parse_m3u8(
      "#EXTM3U\r\n#EXT-X-VERSION:3\r\n#EXT-X-TARGETDURATION:4\r\n#EXT-X-MEDIA-SEQUENCE:17\r\n"
      "#EXTINF:3.966,\r\nseg17.ts\r\n#EXT-X-DISCONTINUITY\r\n#EXTINF:4.0,\r\nseg18.ts\r\n");
  EXPECT_TRUE(m.valid);
  EXPECT_FALSE(m.master);
  EXPECT_FALSE(m.endlist);
  EXPECT_EQ(m.target_duration, 4);
  EXPECT_EQ(m.media_sequence, 17u);
  ASSERT_EQ(m.segments.size(), 2u);
  EXPECT_EQ(m.segments[0].sequence, 17u);
  EXPECT_EQ(m.segments[0].uri, "seg17.ts");
  EXPECT_NEAR(m.segments[0].duration, 3.966, 1e-9);
  EXPECT_EQ(m.segments[1].sequence, 18u);
  auto v = parse_m3u8("#EXTM3U\n#EXTINF:2,\na.ts\n#EXT-X-ENDLIST\n");
  EXPECT_EQ(v.media_sequence, 0u);
  EXPECT_EQ(v.segments.at(0).sequence, 0u);
  EXPECT_TRUE(v.endlist);
  EXPECT_FALSE(parse_m3u8("<html>").valid);
}

TEST(BenchHls, MasterPlaylist) {
  auto m = parse_m3u8(
      "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=800000\nlow/"
      "index.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=1\nhi.m3u8\n");
  EXPECT_TRUE(m.master);
  EXPECT_EQ(m.variants, (std::vector<std::string>{"low/index.m3u8", "hi.m3u8"}));
  EXPECT_TRUE(m.segments.empty());
}

TEST(BenchHls, TsChecker) {
  std::vector<uint8_t> ts(188 * 3, 0xFF);
  ts[0] = ts[188] = ts[376] = 0x47;
  TsChecker c;
  // Split at odd places: still checks the byte at every 188th offset.
  EXPECT_EQ(c.feed(std::span<const uint8_t>(ts).subspan(0, 100)), 0u);
  EXPECT_EQ(c.feed(std::span<const uint8_t>(ts).subspan(100, 200)), 0u);
  EXPECT_FALSE(c.aligned());
  EXPECT_EQ(c.feed(std::span<const uint8_t>(ts).subspan(300)), 0u);
  EXPECT_TRUE(c.aligned());
  EXPECT_EQ(c.packets(), 3u);
  ts[188] = 0x00;
  c.reset();
  EXPECT_EQ(c.feed(ts), 1u);
}

}  // namespace
}  // namespace rill::loadgen

// ---- E-RTMP publish mode (hevc_source) ---------------------------------------------------------

TEST(BenchHevc, AnnexBBecomesSequenceStartAndCodedFramesX) {
  using rill::loadgen::hevc_tags_from_annexb;
  // AUD, VPS, SPS (with a 12-byte profile_tier_level), PPS, IDR; then AUD, TRAIL_R; then AUD, TRAIL_R.
  const std::vector<uint8_t> sps = {0x42, 0x01, 0x01, 0x01, 0x60, 0x00, 0x00, 0x00,
                                    0x90, 0x00, 0x00, 0x00, 0x00, 0x00, 0x5D, 0xA0};
  std::vector<uint8_t> es;
  auto nal = [&es](std::initializer_list<uint8_t> b) {
    es.insert(es.end(), {0, 0, 0, 1});
    es.insert(es.end(), b);
  };
  nal({0x46, 0x01, 0x50});
  nal({0x40, 0x01, 0x0C});
  es.insert(es.end(), {0, 0, 1});
  es.insert(es.end(), sps.begin(), sps.end());
  nal({0x44, 0x01, 0xC1});
  nal({0x26, 0x01, 0xAF, 0x00});  // IDR_W_RADL, first slice; a trailing zero byte is dropped
  nal({0x46, 0x01, 0x50});
  nal({0x02, 0x01, 0xD0});
  nal({0x46, 0x01, 0x50});
  nal({0x02, 0x01, 0xD1});
  const auto tags = hevc_tags_from_annexb(es, 25);
  ASSERT_EQ(tags.size(), 4u);
  const auto seq = rill::protocol::parse_video_tag(tags[0].body.span());
  EXPECT_TRUE(seq.is_enhanced);
  EXPECT_EQ(seq.fourcc, rill::protocol::kFourccHevc);
  EXPECT_TRUE(seq.is_sequence_header);
  const auto rec = tags[0].body.span().subspan(seq.payload_offset);
  EXPECT_EQ(rec[0], 1);      // configurationVersion
  EXPECT_EQ(rec[1], 0x01);   // general_profile_idc 1 (Main), from the SPS
  EXPECT_EQ(rec[12], 0x5D);  // general_level_idc
  const auto idr = rill::protocol::parse_video_tag(tags[1].body.span());
  EXPECT_TRUE(idr.is_keyframe);
  EXPECT_EQ(idr.packet_type, 3);  // CodedFramesX
  EXPECT_EQ(std::vector<uint8_t>(tags[1].body.span().begin() + static_cast<ptrdiff_t>(idr.payload_offset),
                                 tags[1].body.span().end()),
            (std::vector<uint8_t>{0, 0, 0, 3, 0x26, 0x01, 0xAF}));
  EXPECT_FALSE(rill::protocol::parse_video_tag(tags[2].body.span()).is_keyframe);
  EXPECT_EQ(tags[2].timestamp, 40u);
  EXPECT_EQ(tags[3].timestamp, 80u);
  EXPECT_TRUE(rill::loadgen::is_hevc_annexb_path("a/b.h265"));
  EXPECT_FALSE(rill::loadgen::is_hevc_annexb_path("a/b.flv"));
  EXPECT_THROW(hevc_tags_from_annexb(std::vector<uint8_t>{0, 0, 1, 0x26, 0x01, 0xAF}, 25),
               std::runtime_error);
}

namespace {

std::vector<uint8_t> unhex(std::string_view s) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < s.size();) {
    if (s[i] == ' ') {
      ++i;
      continue;
    }
    out.push_back(static_cast<uint8_t>(std::stoi(std::string(s.substr(i, 2)), nullptr, 16)));
    i += 2;
  }
  return out;
}

std::vector<uint8_t> body(const rill::loadgen::SourceTag& t) {
  return {t.body.span().begin(), t.body.span().end()};
}

}  // namespace

// AV1 in IVF: a SequenceStart whose av1C is ffmpeg's for the same sequence header (160x90,
// av1_vp9_opus_test.cpp), then CodedFrames tags at the frames' pts (time base 1/10: 100 ms), the
// frame with a sequence header a keyframe.
TEST(BenchAv1Opus, IvfBecomesAv01SequenceStartAndCodedFrames) {
  const auto file = unhex(
      "444b4946 0000 2000 41563031 a000 5a00 0a000000 01000000 03000000 00000000"
      " 0e000000 0000000000000000 1200 0a0a00000003b4fd936be401"
      " 04000000 0100000000000000 1200 3200"
      " 04000000 0300000000000000 1200 3200");
  const auto tags = rill::loadgen::av1_tags_from_ivf(file);
  ASSERT_EQ(tags.size(), 4u);
  EXPECT_EQ(body(tags[0]), unhex("90 61763031 81000c00 0a0a00000003b4fd936be401"));
  EXPECT_EQ(body(tags[1]), unhex("91 61763031 1200 0a0a00000003b4fd936be401"));
  EXPECT_TRUE(tags[1].keyframe);
  EXPECT_EQ(body(tags[2]), unhex("a1 61763031 1200 3200"));
  EXPECT_FALSE(tags[2].keyframe);
  EXPECT_EQ(tags[2].timestamp, 100u);
  EXPECT_EQ(tags[3].timestamp, 300u);
  EXPECT_TRUE(rill::loadgen::is_ivf_path("a/b.ivf"));
  EXPECT_FALSE(rill::loadgen::is_ivf_path("a/b.flv"));
  auto vp9 = file;
  vp9[10] = '9';  // FourCC AV09: not AV1
  EXPECT_THROW(rill::loadgen::av1_tags_from_ivf(vp9), std::runtime_error);
}

// Opus in Ogg: OpusHead in the SequenceStart, OpusTags left out, packets timed by their TOC bytes
// (0xfc: 20 ms).
TEST(BenchAv1Opus, OggBecomesOpusSequenceStartAndCodedFrames) {
  const auto file = unhex(
      "4f676753 00 02 0000000000000000 07000000 00000000 00000000 04 13 10 01 01"
      " 4f707573486561640102380180bb0000000000 4f707573546167730000000000000000 fc fc");
  const auto tags = rill::loadgen::opus_tags_from_ogg(file);
  ASSERT_EQ(tags.size(), 3u);
  EXPECT_EQ(body(tags[0]), unhex("90 4f707573 4f707573486561640102380180bb0000000000"));
  EXPECT_EQ(body(tags[1]), unhex("91 4f707573 fc"));
  EXPECT_EQ(tags[1].timestamp, 0u);
  EXPECT_EQ(tags[2].timestamp, 20u);
  EXPECT_THROW(rill::loadgen::opus_tags_from_ogg(
                   unhex("4f676753 00 02 0000000000000000 07000000 00000000 00000000 01 02 fcfc")),
               std::runtime_error);  // no OpusHead first
}
