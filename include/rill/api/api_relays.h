#pragma once
// The relays part of the control plane: GET/POST /api/v1/relays, DELETE /api/v1/relays/{id}.
#include <nlohmann/json.hpp>

namespace rill::api {

class ApiServer;

void mount_relay_routes(ApiServer& api);

// The relays in a gathered STATS answer ({"workers": [{"relays": [...]}, ...]}), one per id.
nlohmann::json relay_items(const nlohmann::json& all);

}  // namespace rill::api
