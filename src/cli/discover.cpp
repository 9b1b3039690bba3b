// tpulaunch discover: the discovery-only pipeline (a discovery receipt, never a training one).
#include <fmt/format.h>

#include "commands.hpp"
#include "tpulaunch/render.hpp"

namespace tpulaunch::cli {
namespace {

struct DiscoverArgs {
  std::string slice;
  std::string tpu;
  std::string zone;
  std::string project;
  std::string run_id;
  std::string format;
  int parallel = 8;
  bool bootstrap = false;
  bool teardown = false;
};

Result<Output> run_discover(const DiscoverArgs& args, const Globals& globals) {
  TPULAUNCH_TRY(const Catalog catalog, load_catalog(globals));
  TPULAUNCH_TRY(const Slice* slice, catalog.require(args.slice));
  PlanOptions options;
  options.tpu = args.tpu;
  options.zone = args.zone;
  options.project = args.project;
  options.run_id = args.run_id.empty() ? default_run_id() : args.run_id;
  options.parallel = args.parallel;
  options.bootstrap = args.bootstrap;
  options.teardown = args.teardown;
  TPULAUNCH_TRY(const Plan plan, build_discovery_plan(*slice, options));
  Output output;
  if (args.format == "json") {
    auto j = plan_json(plan);
    j["receipt"] = "discovery";
    j["expected"] = {{"process_count", slice->hosts},
                     {"local_device_count", slice->local_device_count()},
                     {"device_count", slice->device_count()}};
    output.out = j.dump(2) + "\n";
  } else if (args.format == "sh") {
    output.out = render_sh(plan);
  } else {
    output.out = fmt::format("DISCOVERY RECEIPT ONLY: topology discovery is not training.\n"
                             "expected on {}: {} processes, each with {} local and {} global JAX devices\n\n{}",
                             slice->name, slice->hosts, slice->local_device_count(), slice->device_count(),
                             render_text(plan));
  }
  return output;
}

} // namespace

Command setup_discover(CLI::App& parent, const Globals& globals) {
  auto args = std::make_shared<DiscoverArgs>();
  CLI::App* app = parent.add_subcommand("discover", "Emit the discovery-only pipeline: every worker reports its topology");
  app->add_option("--slice", args->slice, "accelerator type, e.g. v5litepod-16")->required();
  app->add_option("--tpu", args->tpu, "TPU VM name")->envname("TPU_NAME");
  app->add_option("--zone", args->zone, "zone")->envname("CLOUDSDK_COMPUTE_ZONE");
  app->add_option("--project", args->project, "project ID")->envname("CLOUDSDK_CORE_PROJECT");
  app->add_option("--run-id", args->run_id, "run id (default: the UTC time)");
  app->add_option("--parallel", args->parallel, "fetches in flight at once")->default_val(8)->check(CLI::Range(1, 1024));
  app->add_flag("--bootstrap", args->bootstrap, "create ~/jax-tpu-lab/.venv and install jax[tpu] on every worker first");
  app->add_flag("--teardown", args->teardown, "delete the TPU VM at the end, only after fetch and verify succeed");
  add_format_option(*app, args->format, {"text", "sh", "json"});
  app->footer("Example:\n  tpulaunch discover --slice v5litepod-16 --tpu my-pod --zone us-west4-a --format sh > discover.sh\n");
  return Command{app, [args, &globals]() { return run_discover(*args, globals); }};
}

} // namespace tpulaunch::cli
