#pragma once
// What an old master hands to the new binary it execs in a binary upgrade (binary_upgrade.h):
// the descriptors that cross exec() and what they are, in one environment variable (RILL_UPGRADE,
// nginx's NGINX variable idea), plus the versions the new binary checks before it starts anything.
//
//   RILL_UPGRADE=link=1;version=0.1.0;master=4100;generation=2;force=0;shm=5,6,7,8;
//                listen=rtmp,127.0.0.1:1935,9,10;listen=http,127.0.0.1:8080,11,12
//
// shm: the ownership table, the HLS sequence memo, the stream totals and the server counters
// (workers/shared_area.h); listen: a listener kind (listeners.h's to_string), the address as
// configured (config::ListenAddress::to_string) and one socket per worker slot.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rill::process {

inline constexpr const char* kUpgradeEnvironment = "RILL_UPGRADE";

// The version of what two generations of different binaries share while the old one retires:
// the worker link's requests and frames (protocol/worker_link_frame.h, worker_link_note.h) and the
// layout of the shared areas (ownership table, HLS sequence memo, stream totals, server counters).
// Raise it with any incompatible change of one of them: an upgrade across it refuses unless forced.
inline constexpr uint32_t kWorkerLinkVersion = 1;

// This executable's worker link version: kWorkerLinkVersion, unless the build defines
// RILL_WORKER_LINK_VERSION for worker_link_version.cpp (the test binary rill-upgrade-incompatible,
// the other side of a refused upgrade). What a handoff carries and checks.
uint32_t worker_link_version();

struct InheritedListener {
  std::string kind;      // "rtmp", "http", "api", "rtmp.tls", "http.tls", "api.tls"
  std::string address;   // as configured: "127.0.0.1:1935", "[::]:1935", ":8080"
  std::vector<int> fds;  // one per worker slot
};

struct UpgradeHandoff {
  uint32_t link_version = 0;  // the old binary's worker_link_version()
  std::string version;        // the old binary's version string, for the logs
  pid_t old_master = 0;       // told "ready" (SIGWINCH) by the new master
  int generation = 0;         // the old master's; the new master's workers are generation + 1
  bool force = false;         // `rill -s upgrade --force`: a restart when the versions differ
  // The shared areas' descriptors: ownership table, HLS sequence memo, stream totals, counters.
  int ownership = -1;
  int hls_memo = -1;
  int stream_totals = -1;
  int counters = -1;
  std::vector<InheritedListener> listeners;
};

std::string encode_upgrade_handoff(const UpgradeHandoff& handoff);

// Parses RILL_UPGRADE's value. Bounded (at most 64 KiB, 1024 descriptors); on anything malformed
// returns nullopt and sets *error ("RILL_UPGRADE: bad descriptor 'x' in listen=...").
std::optional<UpgradeHandoff> parse_upgrade_handoff(std::string_view text, std::string* error);

// Why a new binary of link version `ours` cannot take over from a running one of `running`, or
// nullopt when it can. Names both versions and both builds:
// "the running rill 0.1.0 speaks worker link version 1, this binary (rill 0.2.0) version 2".
std::optional<std::string> link_version_mismatch(uint32_t running, std::string_view running_build,
                                                 uint32_t ours, std::string_view our_build);

}  // namespace rill::process
