#pragma once
// The `api:` section of the configuration file (docs/api.md, docs/configuration.md):
//
//   api:
//     listen: ["127.0.0.1:8081"]   # [] disables the API, /metrics and /console/
//     token: null                  # set: "Authorization: Bearer TOKEN" on every request
//     token_file: null             # or the token read from this file (start and reload)
//     metrics_public: false        # true: /metrics answers without the token
//     tls_listen: []               # HTTPS for all of it, with http.tls_cert and http.tls_key
#include "rill/config/config.h"
#include "rill/config/yaml_reader.h"

namespace rill::config {

// Throws ConfigError (FILE:LINE:COL) on an unknown key, a bad address, an empty token, a
// token_file that cannot be read or is empty (or comes with token), and on
// a tls_listen address that overlaps listen or comes without http.tls_cert and http.tls_key.
ApiConfig read_api_config(const YamlReader& reader, const YamlField& field, const HttpConfig& http);

}  // namespace rill::config
