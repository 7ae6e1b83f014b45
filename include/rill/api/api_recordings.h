#pragma once
// The recordings part of the control plane (docs/api.md): GET /api/v1/recordings (the recordings
// of the apps that record, filtered by app, name and time, paged like /api/v1/streams) and
// DELETE /api/v1/recordings/{id}. Every directory scan and file read runs on the worker's
// BlockingWorkThread; the exchange is held meanwhile and answered from the loop.
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "rill/record/recording_catalog.h"

namespace rill::net {
class BlockingWorkThread;
}

namespace rill::api {

class ApiServer;

// What the routes need, owned by whoever mounts them (and outliving them).
struct RecordingStore {
  net::BlockingWorkThread* work = nullptr;            // null when no app records: nothing is listed
  std::shared_ptr<record::RecordingCatalog> catalog;  // used on the work thread only
  std::vector<record::RecordingCatalog::App> apps;
};

void mount_recording_routes(ApiServer& api, RecordingStore& store);

// RFC 3339 date-time ("2026-12-05T10:00:00Z", "...T10:00:00.5+01:00") as Unix seconds.
std::optional<double> parse_rfc3339(std::string_view text);

nlohmann::json recording_json(const record::RecordingEntry& e);

}  // namespace rill::api
