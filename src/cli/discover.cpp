// tpulaunch discover: the discovery-only pipeline (a discovery receipt, never a training one).
#include <fmt/format.h>

#include "commands.hpp"
#include "tpulaunch/render/render.hpp"

namespace tpulaunch::cli {
namespace {

struct DiscoverArgs {
  std::string slice;
  TpuArgs tpu;
  Format format = Format::text;
};

Result<Output> run_discover(const DiscoverArgs& args, const Globals& globals) {
  TPULAUNCH_TRY(const Catalog catalog, load_catalog(globals));
  TPULAUNCH_TRY(const Slice* slice, require_slice_for(Backend::tpu_vm, catalog, args.slice));
  TPULAUNCH_TRY(const PlanOptions options, plan_options(args.tpu, globals, WithMatrix::no));
  TPULAUNCH_TRY(const Plan plan, build_discovery_plan(*slice, options));
  Output output;
  output.err = zone_warning_line(catalog, options.zone, *slice);
  if (args.format == Format::json) {
    TPULAUNCH_TRY(output.out, json_text(plan_json(plan)));
  } else if (args.format == Format::sh) {
    output.out = render_sh(plan);
  } else {
    output.out = fmt::format("DISCOVERY RECEIPT ONLY: topology discovery is not training.\n"
                             "expected on {}: {}, each with {} local and {} global JAX device{}\n\n{}",
                             slice->name, counted(static_cast<std::size_t>(slice->hosts), "process", "processes"),
                             slice->local_device_count(), slice->device_count(), slice->device_count() == 1 ? "" : "s",
                             render_text(plan));
  }
  return output;
}

} // namespace

Command setup_discover(CLI::App& parent, const Globals& globals) {
  auto args = std::make_shared<DiscoverArgs>();
  CLI::App* app = parent.add_subcommand("discover", "Emit the discovery-only pipeline: every worker reports its topology");
  // Its options are registered when the command line names it (CLI11 calls this before parsing
  // the subcommand's words): a run pays for one subcommand's options, not all ten.
  app->preparse_callback([app, args](std::size_t /*remaining*/) {
    app->add_option("--slice", args->slice, "accelerator type, e.g. v5litepod-16")->required();
    add_tpu_options(*app, args->tpu);
    add_format_option(*app, args->format, {Format::text, Format::sh, Format::json});
    app->footer("Example:\n  tpulaunch discover --slice v5litepod-16 --tpu my-pod --zone us-west4-a --format sh > discover.sh\n");
  });
  return Command{app, [args, &globals]() { return run_discover(*args, globals); }};
}

} // namespace tpulaunch::cli
