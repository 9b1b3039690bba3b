// tpulaunch guard: print (or write) the run guard, the program the run step runs on every TPU VM
// worker, so anyone can read what will run there; --discovery does the same for the discovery
// program. Plans call `tpulaunch guard --write FILE --sha256 HEX` to put the file the stage step
// copies in place, and refuse when this tpulaunch's program is not the one the plan pinned.
#include <fmt/format.h>

#include "commands.hpp"
#include "tpulaunch/matrix/matrix_file.hpp"
#include "tpulaunch/remote/remote_program.hpp"

namespace tpulaunch::cli {
namespace {

struct GuardArgs {
  bool discovery = false;
  std::string write;  // --write FILE; empty: print to stdout
  std::string sha256; // --sha256 HEX; empty: no check
};

Result<Output> run_guard(const GuardArgs& args) {
  const RemoteProgram& program = args.discovery ? discovery_program() : run_guard_program();
  if (!args.sha256.empty() && args.sha256 != program.sha256) {
    return Error{ExitCode::refused,
                 fmt::format("this tpulaunch's {} has sha256 {}, not {} as the plan pinned: run the plan with the "
                             "tpulaunch that made it (set TPULAUNCH), or make the plan again",
                             program.what, program.sha256, args.sha256)};
  }
  Output output;
  if (args.write.empty()) {
    output.out = std::string(program.text);
    return output;
  }
  TPULAUNCH_CHECK(write_file_atomically(args.write, program.text));
  return output;
}

} // namespace

Command setup_guard(CLI::App& parent, const Globals& /*globals*/) {
  auto args = std::make_shared<GuardArgs>();
  CLI::App* app = parent.add_subcommand(
      "guard", "Print the run guard, the program a plan's run step runs on every TPU VM worker (or write it)");
  // Its options are registered when the command line names it (CLI11 calls this before parsing
  // the subcommand's words): a run pays for one subcommand's options, not all ten.
  app->preparse_callback([app, args](std::size_t /*remaining*/) {
    app->add_flag("--discovery", args->discovery, "the discovery program instead (what `tpulaunch discover` runs)");
    app->add_option("--write", args->write, "write it to FILE (atomically, mode 0644) instead of printing it")
        ->type_name("FILE");
    app->add_option("--sha256", args->sha256, "refuse unless its SHA-256 is HEX (what a plan pinned)")
        ->type_name("HEX");
    app->footer("Examples:\n  tpulaunch guard | less\n  tpulaunch guard --write /tmp/run-guard.sh && shellcheck "
                "/tmp/run-guard.sh\n  tpulaunch guard --discovery\n");
  });
  return Command{app, [args]() { return run_guard(*args); }};
}

} // namespace tpulaunch::cli
