#include "rill/process/proctitle.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <cstring>

extern char** environ;

namespace rill::process {
namespace {
char* g_area = nullptr;  // start of argv[0]
size_t g_area_size = 0;  // contiguous bytes from argv[0] through the last env string
// The heap copies of the environment, kept reachable here: unsetenv() drops entries from environ
// (the binary upgrade removes its hand-off variable), which would otherwise orphan their strings.
char** g_env_array = nullptr;
char** g_env_strings = nullptr;
}  // namespace

void proctitle_init(int argc, char** argv) {
  if (argc <= 0 || !argv || !argv[0]) return;
  char* start = argv[0];
  char* end = start;
  for (int i = 0; i < argc; ++i) {
    if (argv[i] != end && i > 0) break;  // not contiguous: stop here
    end = argv[i] + std::strlen(argv[i]) + 1;
  }
  // Environment strings normally follow argv; move them to the heap and claim their space.
  if (environ) {
    size_t n = 0;
    while (environ[n]) ++n;
    char** copy = new char*[n + 1];
    g_env_strings = new char*[n + 1];
    for (size_t i = 0; i < n; ++i) {
      if (environ[i] == end) end = environ[i] + std::strlen(environ[i]) + 1;
      copy[i] = g_env_strings[i] = ::strdup(environ[i]);
    }
    copy[n] = g_env_strings[n] = nullptr;
    g_env_array = copy;
    environ = copy;  // the old array and strings are never freed: they were never malloc'ed
  }
  g_area = start;
  g_area_size = static_cast<size_t>(end - start);
}

void set_proctitle(const std::string& title) {
  if (g_area && g_area_size > 1) {
    size_t n = std::min(title.size(), g_area_size - 1);
    std::memcpy(g_area, title.data(), n);
    std::memset(g_area + n, 0, g_area_size - n);
  }
  // PR_SET_NAME takes at most 16 bytes including the NUL.
  char name[16] = {};
  std::strncpy(name, title.c_str(), sizeof(name) - 1);
  ::prctl(PR_SET_NAME, name, 0, 0, 0);
}

}  // namespace rill::process
