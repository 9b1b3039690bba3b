#include "tpulaunch/remote/remote_program.hpp"

#include "tpulaunch/embedded/discover_py.hpp"
#include "tpulaunch/embedded/run_guard_bash.hpp"
#include "tpulaunch/util/sha256.hpp"

namespace tpulaunch {

const RemoteProgram& run_guard_program() {
  static const RemoteProgram program{"run guard", embedded::run_guard_bash, sha256_hex(embedded::run_guard_bash)};
  return program;
}

const RemoteProgram& discovery_program() {
  static const RemoteProgram program{"discovery program", embedded::discover_py, sha256_hex(embedded::discover_py)};
  return program;
}

} // namespace tpulaunch
