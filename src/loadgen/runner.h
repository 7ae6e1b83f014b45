#pragma once
// rill-bench: runs one benchmark - starts the event-loop threads, ramps the connections up,
// prints progress on stderr once a second, stops after -d seconds and builds the JSON report.
#include <atomic>

#include <nlohmann/json.hpp>

#include "bench_options.h"

namespace rill::loadgen {

// Set (e.g. from a SIGINT handler) to end the run early; the report is still produced.
extern std::atomic<bool> g_interrupted;

// Runs the benchmark and returns the report. Throws std::runtime_error on a setup problem
// (unreadable FLV file, unresolvable host).
nlohmann::json run_bench(const Options& opt);

}  // namespace rill::loadgen
