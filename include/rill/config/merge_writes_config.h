#pragma once
// The keys of how writes leave a worker, at the top level of the configuration
// (docs/configuration.md):
//
//   merge_writes: auto        # auto (default), or a duration 0–1s: 0s never holds a write
//   merge_writes_max: 80ms    # auto: the longest hold, 1ms–100ms
//   send_method: io_uring     # io_uring (one submission per flush batch, default), or sendmsg
#include "rill/config/config.h"
#include "rill/config/yaml_reader.h"

namespace rill::config {

// Reads the three keys of `root` into config; throws ConfigError (FILE:LINE:COL) on a value out
// of range or not one of the choices.
void read_merge_writes(const YamlReader& reader, const YamlMap& root, Config& config);

}  // namespace rill::config
