#pragma once
// The JSON API's views (docs/api.md), computed from what every worker answered to STATS
// (workers/worker_stats.h + worker_details.h). Pure: JSON in, JSON out, no socket, no clock (the
// time comes in as an argument), so every rule of the API is unit-tested here.
//
//   gathered = {"workers": [per worker stats], "errors": [...], "rows": [shared counter rows]}
//
// A stream is listed once, by the worker that owns it (its publisher's); players, bytes out and
// HLS viewers are added up over every worker (a viewer seen by two workers counts once). Server
// totals of bytes come from the shared counter rows, which never go backwards.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace rill::api {

// The query string, percent-decoded ('+' is a space). Repeated keys: the last wins. nullopt on a
// malformed escape or more than 32 parameters.
std::optional<std::map<std::string, std::string>> parse_api_query(std::string_view raw);

struct Paging {
  size_t limit = 100;  // 1..1000, honoured exactly
  size_t offset = 0;
};
inline constexpr size_t kMaxPageLimit = 1000;
// limit/offset from the query; on a bad value `error` says why (answered 400).
Paging parse_paging(const std::map<std::string, std::string>& q, std::string& error);
// {total, limit, offset, items}: items[offset, offset + limit) of `all` (an array).
nlohmann::json page(const nlohmann::json& all, const Paging& p);

// RFC 3339 UTC time with milliseconds: "2026-12-01T19:40:00.123Z".
std::string iso8601(int64_t unix_ms);

// The newest generation among the answers; a worker of an older one is retiring (a reload).
int newest_generation(const nlohmann::json& gathered);
nlohmann::json server_view(const nlohmann::json& gathered, int64_t now_unix_ms);
// Every stream, sorted by app then name; `app` filters when not empty.
nlohmann::json stream_items(const nlohmann::json& gathered, int64_t now_unix_ms, const std::string& app = "");
// Every client (HLS viewers included, id null), sorted by id; filters apply when not empty.
nlohmann::json client_items(const nlohmann::json& gathered, const std::string& app = "",
                            const std::string& name = "", const std::string& kind = "");

}  // namespace rill::api
