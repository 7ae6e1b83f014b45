#pragma once
// GET /metrics: the Prometheus text exposition format 0.0.4 (docs/api.md lists every family),
// computed from what every worker answered (api_views.h's `gathered`). Pure: JSON in, text out.
//
// Server-level `_total` counters (bytes, accepted connections, worker CPU) come from the shared
// counter rows and never go backwards, a worker killed or not. Per-stream counters are the
// stream's own: a stream that goes away (its publisher left, its worker died) and comes back
// starts a new series from zero, which Prometheus' rate() reads as a counter reset.
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace rill::api {

inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string metrics_text(const nlohmann::json& gathered, int64_t now_unix_ms);

// A label value escaped as the format asks: backslash, double quote and line feed.
std::string escape_label_value(std::string_view v);

}  // namespace rill::api
