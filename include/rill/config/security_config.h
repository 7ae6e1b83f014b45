#pragma once
// The security keys of the configuration (docs/security.md): apps.NAME.auth, .access and
// .callbacks, and the per-address connection limits of rtmp: and http:. Called by
// config_loader.cpp; errors are ConfigErrors at the offending key.
#include <string_view>
#include <vector>

#include "rill/config/config.h"
#include "rill/config/yaml_reader.h"

namespace rill::config {

// Reads auth, access and callbacks of one app map into `app`, and checks that they fit together
// (a token mode needs a secret, a callback mode its URL).
void read_app_security(const YamlReader& reader, const YamlMap& app_map, AppConfig& app);

// rtmp.tls_listen, tls_cert, tls_key: addresses must differ from rtmp.listen's; a TLS listener
// needs both files (whether they load is checked by the process that uses them).
void read_rtmp_tls(const YamlReader& reader, const YamlMap& map, RtmpConfig& rtmp);
// http.tls_listen, tls_cert, tls_key: the same for HTTPS.
void read_http_tls(const YamlReader& reader, const YamlMap& map, HttpConfig& http);

// max_connections_per_ip under rtmp: or http:.
void read_connections_per_ip(const YamlMap& map, size_t& out);

}  // namespace rill::config
