// tpulaunch stage: what a plan's write step runs on this machine. It fills the run's stage folder
// (the run guard, the script or the discovery program, the course files, each checked against the
// digest the plan pinned) and writes the plan record, so the stage step can copy the folder into
// the run's own folder on every worker (run/stage.hpp). Made for plans; a person reads it there.
#include <fmt/format.h>

#include "commands.hpp"
#include "tpulaunch/run/stage.hpp"

namespace tpulaunch::cli {
namespace {

struct StageArgs {
  StageRequest request;
  std::vector<std::vector<std::string>> files; // --file LOCAL SHA256:PATH
};

Result<Output> run_stage(StageArgs args) {
  for (const auto& file : args.files) {
    const auto colon = file.at(1).find(':');
    if (colon == std::string::npos) {
      return usage_error(fmt::format("--file {} '{}': expected SHA256:PATH", printable(file.at(0)), printable(file.at(1))));
    }
    args.request.files.push_back(StageFile{file.at(0), file.at(1).substr(colon + 1), file.at(1).substr(0, colon)});
  }
  TPULAUNCH_TRY(const PlanRecord plan, write_stage(args.request));
  Output output;
  output.err = fmt::format("tpulaunch: staged run {}/{} (plan {}) in {}/{}\n", plan.script, plan.run_id,
                           std::string_view(plan.plan_sha256).substr(0, 16), args.request.run_dir, staged_folder(plan));
  return output;
}

} // namespace

Command setup_stage(CLI::App& parent, const Globals& /*globals*/) {
  auto args = std::make_shared<StageArgs>();
  CLI::App* app = parent.add_subcommand(
      "stage", "Write a run's stage folder and plan record (what a plan's write step runs; see docs/lifecycle.md)");
  // Its options are registered when the command line names it (CLI11 calls this before parsing
  // the subcommand's words): a run pays for one subcommand's options, not all of them.
  app->preparse_callback([app, args](std::size_t /*remaining*/) {
    StageRequest& request = args->request;
    app->add_option("run_dir", request.run_dir, "the local run folder, ./tpu-runs/<tpu>/<script>/<run-id>")->required();
    app->add_option("--script", request.plan.script, "the script id")->required();
    app->add_option("--run-id", request.plan.run_id, "the run id")->required();
    app->add_option("--plan", request.plan.plan_sha256, "the plan's digest (64 hex digits)")->required();
    app->add_option("--slice", request.plan.slice, "the slice, for the plan record")->required();
    app->add_option("--slices", request.plan.slices, "the number of slices, for the plan record")->check(CLI::Range(1, 64));
    // What `plan --resume` and `runs` read back from the plan record (each written only when given).
    app->add_option("--tpu", request.plan.tpu, "the TPU, for the plan record");
    app->add_option("--zone", request.plan.zone, "the zone, for the plan record");
    app->add_option("--project", request.plan.project, "the project, for the plan record");
    app->add_option("--capacity", request.plan.capacity, "create or queued: the plan makes its capacity")
        ->check(CLI::IsMember({"create", "queued"}));
    app->add_option("--provisioning", request.plan.provisioning, "spot, preemptible...: how the TPU is provisioned");
    app->add_option("--checkpoint-dir", request.plan.checkpoint_dir, "the run's --checkpoint-dir, for the plan record");
    app->add_option("--resumes", request.plan.resumes, "the run id this run resumes (plan --resume)");
    app->add_option("--connection", request.plan.connection, "how ssh reaches the workers, for the plan record")
        ->check(CLI::IsMember({"internal-ip", "tunnel-through-iap"}));
    app->add_option("--guard-sha256", request.guard_sha256, "refuse unless this tpulaunch's run guard has this digest")
        ->required()
        ->type_name("HEX");
    app->add_flag("--discovery", request.discovery, "stage tpulaunch's discovery program as code/discover.py");
    app->add_option("--file", args->files, "copy LOCAL to code/PATH, refusing unless its SHA-256 is HEX (repeatable)")
        ->expected(2)
        ->type_name("LOCAL HEX:PATH");
    app->footer("Example (from a plan's write step):\n  tpulaunch stage ./tpu-runs/my-pod/tpu-hello/r1 --script tpu-hello "
                "--run-id r1 --plan 9f2c...e1 --slice v5litepod-8 --guard-sha256 41ab...07 --file "
                "public/exercises/tpu-hello.py 8e5a...04:public/exercises/tpu-hello.py\n");
  });
  return Command{app, [args]() { return run_stage(*args); }};
}

} // namespace tpulaunch::cli
