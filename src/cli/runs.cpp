// tpulaunch runs: the runs kept here (list, show), and the calls that ask their workers (status,
// attach) or remove them (clean), printed as a plan to read first.
#include <fmt/format.h>

#include "commands.hpp"
#include "tpulaunch/runs/calls.hpp"
#include "tpulaunch/runs/runs.hpp"

namespace tpulaunch::cli {
namespace {

struct RunsArgs {
  std::string action;
  std::string run;
  std::string dir = "./tpu-runs";
  Format format = Format::text;
  RunsCallOptions call;
  bool internal_ip = false;
  bool tunnel_through_iap = false;
};

Result<Output> list(const RunsArgs& args, const Catalog& catalog) {
  if (!args.run.empty()) {
    return usage_error(fmt::format("runs list takes no run ('{}'): runs show RUN shows one", printable(args.run)));
  }
  std::vector<std::string> warnings;
  const std::vector<RunView> runs = list_runs(args.dir, catalog, warnings);
  Output output;
  for (const std::string& warning : warnings) {
    output.err += fmt::format("tpulaunch: warning: skipped: {}\n", warning);
  }
  if (args.format == Format::json) {
    TPULAUNCH_TRY(output.out, json_text(runs_list_json(runs)));
  } else {
    output.out = render_runs_list_text(runs);
  }
  return output;
}

Result<RunsCall> call_of(const RunsArgs& args) {
  if (args.internal_ip && args.tunnel_through_iap) {
    return usage_error("--internal-ip and --tunnel-through-iap exclude each other (as in gcloud): choose one");
  }
  if (args.action == "status") {
    return RunsCall::status;
  }
  if (args.action == "attach") {
    return RunsCall::attach;
  }
  return RunsCall::clean;
}

Result<Output> run_runs(RunsArgs args, const Globals& globals) {
  TPULAUNCH_TRY(const Catalog catalog, load_catalog(globals));
  const bool local = args.action == "list" || args.action == "show";
  if (local && args.format == Format::sh) {
    return usage_error(
        fmt::format("runs {} prints text or json, not sh (status, attach and clean print plans)", args.action));
  }
  if (args.action == "list") {
    return list(args, catalog);
  }
  if (args.run.empty()) {
    return usage_error(fmt::format("runs {} needs RUN: a run id, or its folder (runs list shows them)", args.action));
  }
  TPULAUNCH_TRY(const RunView run, find_run(args.dir, args.run, catalog));
  Output output;
  if (args.action == "show") {
    if (args.format == Format::json) {
      TPULAUNCH_TRY(output.out, json_text(run_show_json(run)));
    } else {
      output.out = render_run_show_text(run);
    }
    return output;
  }
  TPULAUNCH_TRY(const RunsCall call, call_of(args));
  if (args.internal_ip) {
    args.call.connection = gcloud::Connection::internal_ip;
  } else if (args.tunnel_through_iap) {
    args.call.connection = gcloud::Connection::iap;
  }
  TPULAUNCH_TRY(const RunsPlan plan, runs_plan(run, call, args.call));
  if (args.format == Format::json) {
    TPULAUNCH_TRY(output.out, json_text(runs_plan_json(plan)));
  } else if (args.format == Format::sh) {
    output.out = render_runs_sh(plan);
  } else {
    output.out = render_runs_text(plan);
  }
  return output;
}

} // namespace

Command setup_runs(CLI::App& parent, const Globals& globals) {
  auto args = std::make_shared<RunsArgs>();
  CLI::App* app = parent.add_subcommand("runs", "List, show, ask, follow and clean the runs kept in ./tpu-runs/");
  app->preparse_callback([app, args](std::size_t /*remaining*/) {
    app->add_option("action", args->action, "list, show, status, attach or clean")
        ->required()
        ->check(CLI::IsMember({"list", "show", "status", "attach", "clean"}));
    app->add_option("run", args->run, "a run id, or its run folder (show, status, attach, clean)")->type_name("RUN");
    app->add_option("--dir", args->dir, "where the run folders are (default ./tpu-runs)")->type_name("DIR");
    add_format_option(*app, args->format, {Format::text, Format::sh, Format::json});
    app->add_option("--zone", args->call.zone, "the TPU's zone (default: the one the run's plan record names)");
    app->add_option("--project", args->call.project, "the project (default: the run's plan record's, if any)");
    app->add_flag("--internal-ip", args->internal_ip, "reach the workers by their internal addresses");
    app->add_flag("--tunnel-through-iap", args->tunnel_through_iap, "reach the workers through Identity-Aware Proxy");
    app->add_flag("--yes", args->call.remove_local, "clean: remove the local run folder too, without asking");
    app->footer([] {
      std::string text = fmt::format("Examples:\n"
                                     "  tpulaunch runs list\n"
                                     "  tpulaunch runs show r1 --format json\n"
                                     "  tpulaunch runs attach r1 --format sh | bash\n"
                                     "  tpulaunch runs clean r1 --yes --format sh > clean.sh && bash clean.sh\n\n{}\n",
                                     exit_codes_help());
      text.pop_back();
      return text;
    });
  });
  return Command{app, [args, &globals]() { return run_runs(*args, globals); }};
}

} // namespace tpulaunch::cli
