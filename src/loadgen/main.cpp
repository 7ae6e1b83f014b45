// rill-bench: the load generator of Rill. See docs/rill-bench.md.
#include <csignal>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "bench_options.h"
#include "runner.h"

namespace {
void on_sigint(int) { rill::loadgen::g_interrupted.store(true); }
}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto parsed = rill::loadgen::parse_options(args);
  if (parsed.help) {
    std::fputs(rill::loadgen::usage().c_str(), stdout);
    return 0;
  }
  if (!parsed.options) {
    std::fprintf(stderr, "rill-bench: %s\n\n%s", parsed.error.c_str(), rill::loadgen::usage().c_str());
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGINT, on_sigint);
  std::signal(SIGTERM, on_sigint);
  try {
    nlohmann::json report = rill::loadgen::run_bench(*parsed.options);
    std::cout << report.dump() << std::endl;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rill-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
