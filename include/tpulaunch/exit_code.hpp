#pragma once
// The process exit codes of tpulaunch, in one place. `tpulaunch --help` prints this table;
// README.md and docs/cli.md hold it by hand, and tests/docs_test.cpp checks that they list every
// row word for word. Scripts and CI jobs rely on the numbers, so they never change meaning.
#include <array>
#include <string_view>

namespace tpulaunch {

enum class ExitCode : int {
  success = 0,      // the product was printed: a plan, a report, a clean check
  failure = 1,      // an operation failed at run time (I/O, a lock held, a write that did not land)
  usage = 2,        // the command line or a value on it is invalid; nothing was done
  refused = 3,      // the request is unsafe: a route refused, a check or verify that found problems
  config = 4,       // a catalog, matrix, script or receipt file is malformed or unreadable
  interrupted = 130 // stopped by a signal (128 + SIGINT)
};

struct ExitCodeInfo {
  ExitCode code;
  std::string_view name;
  std::string_view meaning;
};

// The documented table, in numeric order; `--help` prints it, and docs_test checks the docs against it.
inline constexpr std::array<ExitCodeInfo, 6> k_exit_codes{{
    {ExitCode::success, "success", "the plan, report or listing was printed; check and verify found nothing"},
    {ExitCode::failure, "failure", "a run-time failure: a file could not be written, a lock is held"},
    {ExitCode::usage, "usage", "invalid command line or value (flag, slice name, TPU name, zone, id)"},
    {ExitCode::refused, "refused", "unsafe: route refused, stale or unreviewed script, check/verify findings"},
    {ExitCode::config, "config", "malformed catalog, matrix, script or receipt (file and position named)"},
    {ExitCode::interrupted, "interrupted", "interrupted by a signal"},
}};

constexpr int to_int(ExitCode code) { return static_cast<int>(code); }

} // namespace tpulaunch
