// tpulaunch verify: check a fetched run folder's receipts and logs against the catalog.
#include <cstdlib>

#include <fmt/format.h>

#include "commands.hpp"
#include "tpulaunch/receipts/verify.hpp"

namespace tpulaunch::cli {
namespace {

struct VerifyArgs {
  std::string folder;
  std::string slice;
  std::string kind = "training";
  int slices = 1; // --slices: the run spanned that many slices (slice-<s>/worker-<i>/)
  Format format = Format::text;
};

std::string worker_label(int worker) { return worker < 0 ? std::string("run") : fmt::format("worker {}", worker); }

Result<Output> run_verify(const VerifyArgs& args, const Globals& globals) {
  TPULAUNCH_TRY(const Catalog catalog, load_catalog(globals));
  TPULAUNCH_TRY(const Slice* slice, require_slice_for(Backend::tpu_vm, catalog, args.slice));
  VerifyOptions options;
  options.kind = *parse_verify_kind(args.kind);
  // Test seam, read only here: the gcloud stand-in's fake JAX reports backend "standin".
  const char* standin = std::getenv("TPULAUNCH_ALLOW_STANDIN");
  options.allow_standin = standin != nullptr && std::string_view(standin) == "1";
  if (args.slices < 1 || args.slices > k_max_slices) {
    return usage_error(fmt::format("--slices {}: expected 1 to {} slices", args.slices, k_max_slices));
  }
  Target target = slice_target(*slice);
  target.nodes = args.slices;
  TPULAUNCH_TRY(const VerifyReport report, verify_run(args.folder, target, options));

  Output output;
  output.code = report.ok() ? ExitCode::success : ExitCode::refused;
  if (args.format == Format::json) {
    nlohmann::ordered_json j;
    j["folder"] = report.folder;
    j["slice"] = report.slice;
    j["kind"] = to_string(report.kind);
    j["form"] = report.form ? nlohmann::ordered_json(to_string(*report.form)) : nlohmann::ordered_json(nullptr);
    j["workers"] = report.workers;
    j["ok"] = report.ok();
    j["tpu_result"] = report.ok() && !report.standin;
    j["standin"] = report.standin;
    j["training_checked"] = report.kind == VerifyKind::training;
    nlohmann::ordered_json findings = nlohmann::ordered_json::array();
    for (const auto& f : report.findings) {
      findings.push_back({{"worker", f.worker < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(f.worker)},
                          {"field", f.field},
                          {"message", f.message}});
    }
    j["findings"] = std::move(findings);
    TPULAUNCH_TRY(output.out, json_text(j));
    return output;
  }
  std::string& out = output.out;
  const std::string what = report.kind == VerifyKind::discovery ? "discovery receipts (not training)"
                           : report.kind == VerifyKind::logs    ? "logs and run records"
                           : report.form ? fmt::format("training receipts ({} form)", to_string(*report.form))
                                         : "training receipts";
  const std::string workers = counted(static_cast<std::size_t>(report.workers), "worker");
  for (const auto& f : report.findings) {
    out += fmt::format("FAIL {}: {}: {}\n", worker_label(f.worker), f.field, f.message);
  }
  if (report.ok()) {
    out += fmt::format("verified: {} of {} on {} in {}{}\n", what, workers, report.slice, report.folder,
                       report.kind == VerifyKind::training
                           ? ""
                           : "; every worker recorded status 0, and no training claim was checked");
  } else {
    out += fmt::format("not verified: {} in the {} of {} on {}\n", counted(report.findings.size(), "finding"), what,
                       workers, report.slice);
  }
  if (report.standin) {
    out += fmt::format("STAND-IN: these {} come from the gcloud stand-in's fake JAX; this is NOT a TPU result\n",
                       report.kind == VerifyKind::logs ? "logs" : "receipts");
  }
  return output;
}

} // namespace

Command setup_verify(CLI::App& parent, const Globals& globals) {
  auto args = std::make_shared<VerifyArgs>();
  CLI::App* app = parent.add_subcommand("verify", "Check a fetched run folder: receipts, checkpoint, one log per host");
  // Its options are registered when the command line names it (CLI11 calls this before parsing
  // the subcommand's words): a run pays for one subcommand's options, not all ten.
  app->preparse_callback([app, args](std::size_t /*remaining*/) {
    app->add_option("folder", args->folder, "the run folder, ./tpu-runs/<tpu>/<id>/<run-id>")->required();
    app->add_option("--slice", args->slice, "the slice the run used")->required();
    app->add_option("--slices", args->slices, "how many slices of it the run spanned (plan --slices; default 1)");
    app->add_option("--kind", args->kind, verify_kind_list(VerifyNone::excluded) + " (default: training)")
        ->check(CLI::IsMember(verify_kind_names(VerifyNone::excluded)));
    add_format_option(*app, args->format, {Format::text, Format::json});
    app->footer("Example:\n  tpulaunch verify ./tpu-runs/my-pod/collective-update/20261202T101500Z --slice v5litepod-16\n"
                "Exit 0 when every check holds, 3 when any fails, 4 when the folder is missing.\n");
  });
  return Command{app, [args, &globals]() { return run_verify(*args, globals); }};
}

} // namespace tpulaunch::cli
