#pragma once
// systemd readiness notification (sd_notify), sent by the master only. Compiled to no-ops when
// Rill is built without libsystemd (RILL_HAVE_SYSTEMD) or when NOTIFY_SOCKET is unset.
#include <sys/types.h>

#include <string_view>

namespace rill::process::notify {

// READY=1 with MAINPID and an optional STATUS= line.
void ready(std::string_view status = {});
// A binary upgrade handed over: MAINPID=<the new master> and READY=1, sent by the old master
// (the unit's main process, the one NotifyAccess=main listens to), so that systemd tracks the
// new master from now on.
void handed_over(pid_t new_master, std::string_view status);
// RELOADING=1 (+ MONOTONIC_USEC, as Type=notify-reload expects).
void reloading();
// STOPPING=1.
void stopping();
// STATUS=text.
void status(std::string_view text);
// True when notifications are compiled in and NOTIFY_SOCKET is set.
bool enabled();

}  // namespace rill::process::notify
