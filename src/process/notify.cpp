#include "rill/process/notify.h"

#include <cstdlib>
#include <ctime>
#include <string>

#include <unistd.h>

#ifdef RILL_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

namespace rill::process::notify {
namespace {

void send([[maybe_unused]] const std::string& text) {
#ifdef RILL_HAVE_SYSTEMD
  // unset_environment = 0: the master notifies again on every reload and on stop.
  // Workers inherit NOTIFY_SOCKET but never call this (NotifyAccess=main ignores them anyway).
  sd_notify(0, text.c_str());
#endif
}

}  // namespace

bool enabled() {
#ifdef RILL_HAVE_SYSTEMD
  const char* s = std::getenv("NOTIFY_SOCKET");
  return s && *s;
#else
  return false;
#endif
}

void ready(std::string_view status) {
  if (!enabled()) return;
  std::string text = "READY=1\nMAINPID=" + std::to_string(::getpid());
  if (!status.empty()) text += "\nSTATUS=" + std::string(status);
  send(text);
}

void handed_over(pid_t new_master, std::string_view status) {
  if (!enabled()) return;
  send("MAINPID=" + std::to_string(new_master) + "\nREADY=1\nSTATUS=" + std::string(status));
}

void reloading() {
  if (!enabled()) return;
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  unsigned long long usec =
      static_cast<unsigned long long>(ts.tv_sec) * 1000000ULL + static_cast<unsigned long long>(ts.tv_nsec) / 1000ULL;
  send("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec) + "\nSTATUS=reloading configuration");
}

void stopping() {
  if (!enabled()) return;
  send("STOPPING=1\nSTATUS=stopping");
}

void status(std::string_view text) {
  if (!enabled()) return;
  send("STATUS=" + std::string(text));
}

}  // namespace rill::process::notify
