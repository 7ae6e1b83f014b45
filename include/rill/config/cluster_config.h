#pragma once
// The cluster keys of an app — `edge`, `push`, `pull` (docs/cluster.md) — and the RTMP URLs they
// name. Kept apart from config_loader.cpp: the loader calls read_cluster_keys() once per app.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rill/config/config.h"
#include "rill/config/yaml_reader.h"

namespace rill::config {


// "rtmp://host[:port]/app[/name]": host a name, an IPv4 address or [IPv6]; app and name follow the
// one name rule. nullopt with *error set ("expected rtmp://HOST[:PORT]/APP[/NAME]: ...") otherwise.
std::optional<RtmpUrl> parse_rtmp_url(std::string_view text, std::string* error = nullptr);

// The URL of stream `name` at `url`: url.name when the URL ends in /NAME, else `name`.
std::string stream_url(const RtmpUrl& url, const std::string& name);

// Reads apps.X.edge, apps.X.push and apps.X.pull of `map` (the app's map) into `app`.
void read_cluster_keys(const YamlReader& reader, const YamlMap& map, AppConfig& app);

}  // namespace rill::config
