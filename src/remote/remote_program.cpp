#include "tpulaunch/remote/remote_program.hpp"

#include <fmt/format.h>

#include "tpulaunch/embedded/discover_py.hpp"
#include "tpulaunch/embedded/run_guard_bash.hpp"
#include "tpulaunch/util/sha256.hpp"

namespace tpulaunch {
namespace {

RemoteProgram make(std::string_view what, std::string_view text, std::string_view stem, std::string_view extension) {
  RemoteProgram program{what, text, sha256_hex(text), ""};
  program.file_name = fmt::format("{}-{}{}", stem, std::string_view(program.sha256).substr(0, 12), extension);
  return program;
}

} // namespace

const RemoteProgram& run_guard_program() {
  static const RemoteProgram program = make("run guard", embedded::run_guard_bash, "tpulaunch-run-guard", ".sh");
  return program;
}

const RemoteProgram& discovery_program() {
  static const RemoteProgram program = make("discovery program", embedded::discover_py, "tpulaunch-discover", ".py");
  return program;
}

} // namespace tpulaunch
