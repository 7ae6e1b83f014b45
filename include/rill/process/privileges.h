#pragma once
// `user:` in the configuration: the master (usually root) binds the ports, then each worker
// switches to this user right after fork, before it serves anything.
#include <sys/types.h>

#include <string>

namespace rill::process {

struct UserIds {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;  // the user's primary group
};

// Look up NAME (a user name or a numeric uid) and check that this process can switch to it
// (it must be root, or already be that user). Throws std::runtime_error with a clear message
// ("unknown user 'x'", "user 'x' requires starting rill as root").
UserIds resolve_user(const std::string& name);

// initgroups + setgid + setuid, then verify that root cannot be regained. A no-op when the
// process already runs as that user. Throws std::runtime_error on failure.
void drop_privileges(const UserIds& user);

}  // namespace rill::process
