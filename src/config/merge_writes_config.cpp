#include "rill/config/merge_writes_config.h"

#include <chrono>

namespace rill::config {

void read_merge_writes(const YamlReader& reader, const YamlMap& root, Config& config) {
  using std::chrono::milliseconds;
  if (auto f = root.get("merge_writes")) {
    if (f->node.IsScalar() && f->node.Scalar() == "auto") {
      config.merge_writes_auto = true;
    } else {
      if (!f->node.IsScalar())
        reader.fail(*f, "expected auto or a duration, got " + YamlReader::describe(f->node));
      config.merge_writes_auto = false;
      config.merge_writes = reader.duration(*f, milliseconds(0), milliseconds(1000));
    }
  }
  root.read_duration("merge_writes_max", config.merge_writes_max, milliseconds(1), milliseconds(100));
  if (auto f = root.get("send_method")) {
    config.send_method = reader.one_of(*f, {"sendmsg", "io_uring"}) == "io_uring"
                             ? Config::SendMethod::IoUring
                             : Config::SendMethod::Sendmsg;
  }
}

}  // namespace rill::config
