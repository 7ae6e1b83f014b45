// The configuration as the master loads it: the file or the embedded default, -p applied, TLS
// material checked (master.h).
#include "rill/process/master.h"
#include "rill/server/rtmps_context.h"

namespace rill::process {

config::Config load_master_config(const MasterOptions& opts) {
  config::Config c =
      opts.config_path ? config::load_config_file(*opts.config_path) : config::load_default_config();
  if (opts.pid_file) c.pid_file = *opts.pid_file;
  // An unreadable or mismatched certificate or key fails here, with the file's name.
  server::make_rtmps_context(c.rtmp);
  server::make_https_context(c.http);
  server::make_api_tls_context(c);
  return c;
}

}  // namespace rill::process
