#pragma once
// Process titles as shown by ps(1) and /proc/PID/cmdline ("rill: master -c /etc/rill/rill.yaml",
// "rill: worker 0"), done the nginx way: the argv strings (and the environment strings right
// after them, which are first copied to the heap) are overwritten in place.
#include <string>

namespace rill::process {

// Call once, first thing in main(), before anything keeps pointers into argv or environ.
// Copies the environment to the heap so its original memory can hold the title. argv itself
// stays usable until the first set_proctitle().
void proctitle_init(int argc, char** argv);

// Overwrite the title (truncated to the space available) and set the thread name
// (PR_SET_NAME, 15 characters: what top and /proc/PID/comm show). Without proctitle_init()
// only the thread name changes.
void set_proctitle(const std::string& title);

}  // namespace rill::process
