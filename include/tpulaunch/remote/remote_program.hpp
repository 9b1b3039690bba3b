#pragma once
// The programs tpulaunch sends to the TPU VM workers as files (src/remote/, compiled in as text):
// the run guard, which the bootstrap and run steps' ssh calls run on every worker, and the
// discovery program. A plan's write step puts them in the run's stage folder (run/stage.hpp), under
// the names below, and the run step names the guard's digest, so the guard can check that it is
// the one the plan pinned.
#include <string>
#include <string_view>

namespace tpulaunch {

// Their names in the stage folder: the guard beside code/, the discovery program in code/.
inline constexpr std::string_view k_run_guard_file = "tpulaunch-run-guard.sh";
inline constexpr std::string_view k_discovery_file = "discover.py";

struct RemoteProgram {
  std::string_view what; // "run guard", "discovery program": for messages
  std::string_view text; // the file's bytes, exactly as built from src/remote/
  std::string sha256;    // lower-case hex SHA-256 of `text`
};

// src/remote/run_guard/ (its parts, joined).
const RemoteProgram& run_guard_program();
// src/remote/discover.py.
const RemoteProgram& discovery_program();

} // namespace tpulaunch
