// api/api_views + metrics_text: the control plane's rules on JSON (no socket, no clock).
#include "rill/api/api_views.h"

#include <gtest/gtest.h>

#include <string>

#include "rill/api/metrics_text.h"

using namespace rill::api;
using nlohmann::json;

namespace {

constexpr int64_t kNow = 1'800'000'000'000;

json stream_detail(const std::string& name, bool owner, uint64_t rtmp, uint64_t flv, uint64_t bytes_out) {
  json d = {{"key", "live/" + name},
            {"app", "live"},
            {"name", name},
            {"owner", owner},
            {"live", true},
            {"publisher", nullptr},
            {"video", nullptr},
            {"audio", nullptr},
            {"bitrate_in_kbps", 700.4},
            {"bytes_in", 1000},
            {"bytes_out", bytes_out},
            {"dropped_frames", 1},
            {"players", {{"rtmp", rtmp}, {"flv", flv}}},
            {"hls", {{"enabled", true}, {"media_sequence", 3}, {"segments", 5}, {"segments_total", 8}}}};
  if (owner)
    d["publisher"] = {
        {"client_id", 7}, {"proto", "rtmp"}, {"addr", "127.0.0.1:5000"}, {"since_ms", kNow - 10'000}};
  return d;
}

// Two workers: worker 0 owns live/a (3 RTMP players there), worker 1 owns live/b and has 2 FLV
// players of live/a through its worker link; one HLS viewer of live/a is seen by both workers.
json gathered() {
  json w0 = {{"slot", 0},
             {"pid", 100},
             {"sessions", 4},
             {"master_pid", 99},
             {"version", "0.1.0"},
             {"connections", {{"rtmp", 4}, {"http-flv", 0}, {"worker-link", 1}}},
             {"process",
              {{"cpu_pct", 1.25},
               {"rss_bytes", 1000},
               {"open_fds", 20},
               {"merge_hold_ms", 12.34},
               {"merge_video_frames", 2},
               {"send_method", "io_uring"},
               {"server_started_ms", kNow - 60'000},
               {"loop_lag", {{"sum_s", 0.5}, {"count", 10}, {"max_s", 0.1}}}}},
             {"stream_details", {stream_detail("a", true, 3, 0, 300)}},
             {"clients",
              {{{"id", 9},
                {"kind", "player"},
                {"proto", "rtmp"},
                {"app", "live"},
                {"name", "a"},
                {"since_ms", kNow}},
               {{"id", 7},
                {"kind", "publisher"},
                {"proto", "rtmp"},
                {"app", "live"},
                {"name", "a"},
                {"since_ms", kNow}}}},
             {"hls_viewers", {{"live/a", {"127.0.0.1 ua1"}}}}};
  json w1 = {{"slot", 1},
             {"pid", 101},
             {"sessions", 3},
             {"stream_details", {stream_detail("a", false, 0, 2, 200), stream_detail("b", true, 0, 0, 0)}},
             {"clients",
              {{{"id", 20},
                {"kind", "player"},
                {"proto", "flv"},
                {"app", "live"},
                {"name", "a"},
                {"since_ms", kNow}}}},
             {"hls_viewers", {{"live/a", {"127.0.0.1 ua1", "127.0.0.1 ua2"}}}}};
  json rows = {{{"slot", 0},
                {"bytes_in", 10},
                {"bytes_out", 20},
                {"accepted", {{"rtmp", 5}, {"flv", 0}}},
                {"cpu_seconds", 1.5}},
               {{"slot", 1},
                {"bytes_in", 1},
                {"bytes_out", 2},
                {"accepted", {{"rtmp", 1}, {"flv", 2}}},
                {"cpu_seconds", 0.5}}};
  return {{"workers", {w0, w1}}, {"errors", json::array()}, {"rows", rows}};
}

}  // namespace

TEST(ApiViews, StreamsAreMergedAcrossWorkers) {
  const json items = stream_items(gathered(), kNow);
  ASSERT_EQ(items.size(), 2u);
  const json& a = items[0];
  EXPECT_EQ(a["name"], "a");
  EXPECT_EQ(a["worker"], 0);
  EXPECT_EQ(a["players"], json({{"rtmp", 3}, {"flv", 2}, {"hls", 2}, {"total", 7}}));
  EXPECT_EQ(a["bytes_out"], 500);
  EXPECT_EQ(a["publisher"]["client_id"], 7);
  EXPECT_DOUBLE_EQ(a["uptime_s"].get<double>(), 10.0);
  EXPECT_EQ(items[1]["worker"], 1);
  EXPECT_EQ(stream_items(gathered(), kNow, "other").size(), 0u);
}

TEST(ApiViews, OwnersSharedTotalsWinOverTheSumOfTheWorkersThatAnswered) {
  // The owner's totals (workers/stream_totals.h) include a killed worker's part, which no
  // answering worker reports any more: they are the stream's counters, in the API and /metrics.
  json g = gathered();
  g["workers"][0]["stream_details"][0]["totals"] = {
      {"bytes_in", 4000}, {"bytes_out", 9000}, {"dropped_frames", 6}, {"hls_segments", 12}};
  const json a = stream_items(g, kNow)[0];
  EXPECT_EQ(a["bytes_in"], 4000);
  EXPECT_EQ(a["bytes_out"], 9000);
  EXPECT_EQ(a["dropped_frames"], 6);
  EXPECT_EQ(a["hls"]["segments_total"], 12);
  EXPECT_EQ(a["hls"]["segments"], 5);  // a gauge: the owner's playlist
  const std::string text = metrics_text(g, kNow);
  EXPECT_NE(text.find("rill_stream_bytes_out_total{app=\"live\",stream=\"a\"} 9000\n"), std::string::npos);
  EXPECT_NE(text.find("rill_stream_bytes_in_total{app=\"live\",stream=\"a\"} 4000\n"), std::string::npos);
  EXPECT_NE(text.find("rill_dropped_frames_total{app=\"live\",stream=\"a\"} 6\n"), std::string::npos);
  EXPECT_NE(text.find("rill_hls_segments_total{app=\"live\",stream=\"a\"} 12\n"), std::string::npos);
  // Without them, the sums as before.
  EXPECT_EQ(stream_items(gathered(), kNow)[0]["bytes_out"], 500);
}

TEST(ApiViews, ServerTotals) {
  const json s = server_view(gathered(), kNow);
  EXPECT_EQ(s["pid"], 99);
  EXPECT_DOUBLE_EQ(s["uptime_s"].get<double>(), 60.0);
  EXPECT_EQ(s["workers"].size(), 2u);
  EXPECT_EQ(s["workers"][1]["streams"], 1);
  EXPECT_DOUBLE_EQ(s["workers"][0]["merge_hold_ms"].get<double>(), 12.3);
  EXPECT_DOUBLE_EQ(s["workers"][1]["merge_hold_ms"].get<double>(), 0.0);  // not reported: none
  EXPECT_EQ(s["workers"][0]["merge_video_frames"], 2);
  EXPECT_EQ(s["workers"][1]["merge_video_frames"], 0);
  EXPECT_EQ(s["workers"][0]["send_method"], "io_uring");
  EXPECT_EQ(s["workers"][1]["send_method"], "sendmsg");  // not reported: what an older worker used
  EXPECT_EQ(s["totals"]["streams"], 2);
  EXPECT_EQ(s["totals"]["publishers"], 2);
  EXPECT_EQ(s["totals"]["players"], json({{"rtmp", 3}, {"flv", 2}, {"hls", 2}}));
  EXPECT_EQ(s["totals"]["bytes_in"], 11);
  EXPECT_EQ(s["totals"]["bytes_out"], 22);
}

TEST(ApiViews, ClientsSortedFilteredWithHlsViewers) {
  const json all = client_items(gathered());
  ASSERT_EQ(all.size(), 5u);  // 3 connections + 2 distinct HLS viewers
  EXPECT_EQ(all[0]["id"], 7);
  EXPECT_EQ(all[1]["id"], 9);
  EXPECT_EQ(all[2]["id"], 20);
  EXPECT_EQ(all[2]["worker"], 1);
  EXPECT_TRUE(all[3]["id"].is_null());
  EXPECT_EQ(all[3]["proto"], "hls");
  EXPECT_EQ(client_items(gathered(), "", "", "publisher").size(), 1u);
  EXPECT_EQ(client_items(gathered(), "live", "b").size(), 0u);
}

TEST(ApiViews, Paging) {
  std::string error;
  auto paging = [&error](const std::string& query) {
    error.clear();
    return parse_paging(*parse_api_query(query), error);
  };
  EXPECT_EQ(paging("").limit, 100u);
  EXPECT_EQ(paging("limit=1").limit, 1u);
  EXPECT_EQ(paging("limit=1000").limit, 1000u);
  EXPECT_TRUE(error.empty());
  for (const char* bad :
       {"limit=0", "limit=1001", "limit=-1", "limit=x", "limit=", "offset=-1", "offset=1e3"}) {
    paging(bad);
    EXPECT_FALSE(error.empty()) << bad;
  }
  json all = json::array({1, 2, 3});
  EXPECT_EQ(page(all, {1, 0})["items"], json::array({1}));
  EXPECT_EQ(page(all, {2, 2})["items"], json::array({3}));
  const json past = page(all, {10, 5});
  EXPECT_EQ(past["items"], json::array());
  EXPECT_EQ(past["total"], 3);
  EXPECT_EQ(past["offset"], 5);
}

TEST(ApiViews, QueryDecoding) {
  const auto q = parse_api_query("app=li%76e&name=a+b&&x");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->at("app"), "live");
  EXPECT_EQ(q->at("name"), "a b");
  EXPECT_EQ(q->at("x"), "");
  EXPECT_FALSE(parse_api_query("a=%zz"));
  std::string many;
  for (char c = 'A'; c < 'A' + 40; ++c) {
    many.push_back(c);
    many.append("=1&");
  }
  EXPECT_FALSE(parse_api_query(many));
}

TEST(ApiViews, Iso8601) { EXPECT_EQ(iso8601(1'800'000'000'123), "2027-01-15T08:00:00.123Z"); }

TEST(MetricsText, FamiliesAndSums) {
  const std::string text = metrics_text(gathered(), kNow);
  EXPECT_NE(text.find("# TYPE rill_connections_accepted_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("rill_connections_accepted_total{proto=\"rtmp\"} 6\n"), std::string::npos);
  EXPECT_NE(text.find("rill_stream_players{app=\"live\",stream=\"a\",proto=\"hls\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("rill_worker_cpu_seconds_total{worker=\"0\"} 1.5\n"), std::string::npos);
  EXPECT_NE(text.find("rill_worker_loop_lag_seconds_count{worker=\"0\",pid=\"100\"} 10\n"),
            std::string::npos);
  EXPECT_NE(text.find("rill_streams 2\n"), std::string::npos);
  // Every sample line follows its family's TYPE line.
  std::string family;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    const std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.rfind("# TYPE ", 0) == 0) {
      family = line.substr(7, line.find(' ', 7) - 7);
    } else if (line[0] != '#') {
      EXPECT_EQ(line.rfind(family, 0), 0u) << line;
    }
  }
}

// What the shipped alerts (packaging/prometheus/rill-alerts.yml) need: the respawns of a slot
// (from its shared counter row) and each worker's descriptor limit beside its open descriptors.
TEST(MetricsText, WorkerRestartsAndDescriptorLimit) {
  json g = gathered();
  g["rows"][1]["restarts"] = 3;
  g["workers"][0]["process"]["max_fds"] = 1024;
  const std::string text = metrics_text(g, kNow);
  EXPECT_NE(text.find("# TYPE rill_worker_restarts_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("rill_worker_restarts_total{worker=\"0\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("rill_worker_restarts_total{worker=\"1\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE rill_worker_max_fds gauge\n"), std::string::npos);
  EXPECT_NE(text.find("rill_worker_max_fds{worker=\"0\",pid=\"100\"} 1024\n"), std::string::npos);
  EXPECT_NE(text.find("rill_worker_max_fds{worker=\"1\",pid=\"101\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("rill_worker_open_fds{worker=\"0\",pid=\"100\"} 20\n"), std::string::npos);
}

// Recording downloads closed by their send timeout (server/file_range_body.h): the slots' rows summed.
TEST(MetricsText, DownloadSendTimeoutsSummedOverTheSlots) {
  json g = gathered();
  EXPECT_NE(metrics_text(g, kNow).find("rill_download_send_timeouts_total 0\n"), std::string::npos);
  g["rows"][0]["download_send_timeouts"] = 2;
  g["rows"][1]["download_send_timeouts"] = 1;
  const std::string text = metrics_text(g, kNow);
  EXPECT_NE(text.find("# TYPE rill_download_send_timeouts_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("rill_download_send_timeouts_total 3\n"), std::string::npos);
}

TEST(MetricsText, LabelEscaping) { EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd"); }

// After a reload: slot 0's old worker (generation 0, pid 100) still owns live/a and its players;
// the new generation's workers of slots 0 and 1 (generation 1) are counted beside it.
TEST(ApiViews, BothGenerationsAreCountedAndLabelled) {
  json g = gathered();
  g["workers"][1]["generation"] = 1;
  json fresh = {{"slot", 0},
                {"pid", 102},
                {"generation", 1},
                {"sessions", 1},
                {"stream_details", {stream_detail("a", false, 1, 0, 100)}},
                {"clients",
                 {{{"id", 30},
                   {"kind", "player"},
                   {"proto", "rtmp"},
                   {"app", "live"},
                   {"name", "a"},
                   {"since_ms", kNow}}}}};
  g["workers"].push_back(fresh);
  const json server = server_view(g, kNow);
  ASSERT_EQ(server["workers"].size(), 3u);
  EXPECT_EQ(server["workers"][0]["pid"], 100);
  EXPECT_EQ(server["workers"][0]["retiring"], true);
  EXPECT_EQ(server["workers"][1]["retiring"], false);
  EXPECT_EQ(server["workers"][2]["retiring"], false);
  EXPECT_EQ(server["totals"]["players"]["rtmp"], 4);  // 3 on the retiring worker + 1 on the new one
  EXPECT_EQ(server["totals"]["players"]["flv"], 2);
  const json items = stream_items(g, kNow);
  EXPECT_EQ(items[0]["worker"], 0);
  EXPECT_EQ(items[0]["worker_pid"], 100);
  const json clients = client_items(g, "", "", "player");
  size_t retiring = 0, fresh_ones = 0;
  for (const json& c : clients) {
    if (c["proto"] == "hls") continue;
    (c["worker_retiring"].get<bool>() ? retiring : fresh_ones) += 1;
    if (c["id"] == 30) {
      EXPECT_EQ(c["worker_pid"], 102);
    }
  }
  EXPECT_EQ(retiring, 1u);  // id 9 on pid 100
  EXPECT_EQ(fresh_ones, 2u);
  const std::string text = metrics_text(g, kNow);
  EXPECT_NE(text.find("rill_worker_retiring{worker=\"0\",pid=\"100\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("rill_worker_retiring{worker=\"0\",pid=\"102\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("rill_worker_resident_memory_bytes{worker=\"0\",pid=\"102\"} 0\n"), std::string::npos);
}
