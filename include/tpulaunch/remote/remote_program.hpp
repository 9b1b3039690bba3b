#pragma once
// The programs tpulaunch sends to the TPU VM workers as files (src/remote/, compiled in as text):
// the run guard, which the run step's ssh call runs on every worker, and the discovery program.
// A plan writes each one next to its run folder (`tpulaunch guard --write`), stages it with the
// script in the same scp call, and calls it by a name that carries its digest, so the command a
// person reads says which program runs, and the program can check that it is that one.
#include <string>
#include <string_view>

namespace tpulaunch {

struct RemoteProgram {
  std::string_view what; // "run guard", "discovery program": for messages
  std::string_view text; // the file's bytes, exactly as in src/remote/
  std::string sha256;    // lower-case hex SHA-256 of `text`
  std::string file_name; // "tpulaunch-run-guard-<first 12 hex of sha256>.sh", the name it travels as
};

// src/remote/run_guard.bash.
const RemoteProgram& run_guard_program();
// src/remote/discover.py.
const RemoteProgram& discovery_program();

} // namespace tpulaunch
