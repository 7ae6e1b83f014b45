#include "rill/process/privileges.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace rill::process {

UserIds resolve_user(const std::string& name) {
  if (name.empty()) throw std::runtime_error("user: empty user name");
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* result = nullptr;
  int rc = ::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &result);
  if (!result && name.find_first_not_of("0123456789") == std::string::npos) {
    rc = ::getpwuid_r(static_cast<uid_t>(std::stoul(name)), &pw, buf.data(), buf.size(), &result);
  }
  if (!result) {
    if (rc != 0) throw std::runtime_error("cannot look up user '" + name + "': " + std::strerror(rc));
    throw std::runtime_error("unknown user '" + name + "'");
  }
  UserIds ids{pw.pw_name, pw.pw_uid, pw.pw_gid};
  if (::geteuid() != 0 && ::geteuid() != ids.uid)
    throw std::runtime_error("user '" + name + "' requires starting rill as root (running as uid " +
                             std::to_string(::geteuid()) + ")");
  return ids;
}

void drop_privileges(const UserIds& user) {
  if (::geteuid() == user.uid && ::getuid() == user.uid && ::getegid() == user.gid) return;
  auto fail = [&](const char* what) {
    throw std::runtime_error(std::string("cannot switch to user '") + user.name + "': " + what +
                             ": " + std::strerror(errno));
  };
  if (::initgroups(user.name.c_str(), user.gid) != 0) fail("initgroups");
  if (::setgid(user.gid) != 0) fail("setgid");
  if (::setuid(user.uid) != 0) fail("setuid");
  if (user.uid != 0 && ::setuid(0) == 0) {
    errno = EPERM;
    fail("root privileges could be regained");
  }
}

}  // namespace rill::process
