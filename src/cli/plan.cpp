// tpulaunch plan: route one script and print the exact pipeline.
#include <optional>

#include <fmt/format.h>

#include "commands.hpp"
#include "tpulaunch/classify/classifier.hpp"
#include "tpulaunch/gke/plan.hpp"
#include "tpulaunch/matrix/exercises.hpp"
#include "tpulaunch/matrix/matrix_file.hpp"
#include "tpulaunch/plan/backend.hpp"
#include "tpulaunch/plan/request.hpp"
#include "tpulaunch/render/render.hpp"
#include "tpulaunch/route/router.hpp"
#include "tpulaunch/runs/resume.hpp"
#include "tpulaunch/runs/runs.hpp"
#include "tpulaunch/values/validate.hpp"

namespace tpulaunch::cli {
namespace {

struct PlanArgs {
  std::string script;
  std::string slice;
  TpuArgs tpu;
  Format format = Format::text;
  std::string verify;
  bool course = false;
  int slices = 1; // --slices N (given: slices_option counts it)
  const CLI::Option* slices_option = nullptr;
  bool slices_resumed = false;   // --slices not given, and the resumed run's count taken
  std::string checkpoint_dir;    // --checkpoint-dir gs://...
  std::string resume;            // --resume RUN
  std::vector<std::string> env;  // KEY=VALUE
  std::vector<std::string> args; // after --
  const CLI::Option* verify_option = nullptr;
  // The GKE placement (--gke CLUSTER --location LOC [--namespace NS] --image IMAGE) and --manifest.
  GkePlacement gke;
  std::string manifest;
  const CLI::Option* gke_option = nullptr;
  const CLI::App* app = nullptr; // plan's, to ask which TPU VM options were given
};

// --env KEY=VALUE: the name before the first '=', any value after it.
Result<std::vector<EnvVar>> parse_env(const std::vector<std::string>& items) {
  std::vector<EnvVar> env;
  for (const std::string& item : items) {
    const auto equals = item.find('=');
    if (equals == std::string::npos) {
      return usage_error(fmt::format("--env '{}': expected KEY=VALUE", printable(item)));
    }
    env.push_back(EnvVar{item.substr(0, equals), item.substr(equals + 1)});
  }
  return env;
}

// --resume RUN: the rules are the core's (runs/resume.hpp); this maps the flags to its fields and back.
Status take_from_resumed(PlanArgs& args, const RunView& run, const std::string& id) {
  ResumeFields fields{args.slice,
                      args.tpu.tpu,
                      args.tpu.zone,
                      args.tpu.project,
                      args.checkpoint_dir,
                      args.tpu.run_id,
                      args.slices_option->count() > 0 ? std::optional<int>(args.slices) : std::nullopt,
                      args.tpu.create,
                      args.tpu.queued,
                      args.tpu.spot,
                      args.tpu.preemptible};
  TPULAUNCH_CHECK(resume_from(fields, run, id));
  args.slice = fields.slice;
  args.tpu.tpu = fields.tpu;
  args.tpu.zone = fields.zone;
  args.tpu.project = fields.project;
  args.checkpoint_dir = fields.checkpoint_dir;
  args.slices_resumed = args.slices_option->count() == 0 && fields.slices.has_value();
  args.slices = fields.slices.value_or(args.slices);
  args.tpu.create = fields.create;
  args.tpu.queued = fields.queued;
  args.tpu.spot = fields.spot;
  args.tpu.preemptible = fields.preemptible;
  return Ok{};
}

// The request as the command line gives it: the placement, the flags given by name (the TPU-only
// ones in the order they are registered, then --verify and --zone) and whether the manifest is asked
// for. Its options and topology are mapped once the script is routed (`map_options`).
PlanRequest request_of(const PlanArgs& args) {
  PlanRequest request;
  if (args.gke_option->count() > 0) {
    request.placement = args.gke;
  }
  request.given = given_flags(args.tpu);
  for (const char* name : {"--verify", "--zone"}) {
    if (const CLI::Option* option = args.app->get_option_no_throw(name); option != nullptr && option->count() > 0) {
      request.given.emplace_back(name);
    }
  }
  request.manifest = args.format == Format::yaml || !args.manifest.empty();
  return request;
}

// The flags as typed values: the options every route reads, and on GKE the placement's project
// (a GKE route takes no TPU name or zone: $TPU_NAME and the configured zone are not its).
Status map_options(PlanRequest& request, const PlanArgs& args, const Globals& globals, const RunView* resumed) {
  TPULAUNCH_TRY(PlanOptions options, plan_options(args.tpu, globals, WithMatrix::yes));
  options.form = args.course ? PlanForm::course : PlanForm::full;
  if (!args.verify.empty()) {
    options.verify = parse_verify_kind(args.verify);
  }
  TPULAUNCH_TRY(options.env, parse_env(args.env));
  options.checkpoint_dir = args.checkpoint_dir;
  if (resumed != nullptr) {
    options.resumes = resumed->plan.run_id;
  }
  options.args = args.args;
  if (auto* where = std::get_if<GkePlacement>(&request.placement)) {
    options.tpu.clear();
    options.zone.clear();
    where->project = options.project;
  }
  request.options = std::move(options);
  return Ok{};
}

// The GKE backend's forms (--manifest also writes the manifest, atomically, before anything is
// printed).
Result<Output> run_gke_plan(const PlanArgs& args, const ScriptStatus& status, RouteKind route,
                            const PlanRequest& request) {
  TPULAUNCH_TRY(const gke::GkePlan plan, gke::build_gke_plan(status, route, request));
  if (!args.manifest.empty()) {
    TPULAUNCH_CHECK(write_file_atomically(args.manifest, plan.manifest.dump(2) + "\n"));
  }
  Output output;
  if (args.format == Format::json) {
    TPULAUNCH_TRY(output.out, json_text(gke::gke_plan_json(plan)));
  } else if (args.format == Format::sh) {
    output.out = gke::render_gke_sh(plan);
  } else if (args.format == Format::yaml) {
    output.out = gke::manifest_yaml(plan.manifest);
  } else {
    output.out = gke::render_gke_text(plan);
  }
  return output;
}

Result<Output> refused(const PlanArgs& args, const ScriptStatus& status, const Slice* slice, const Refusal& refusal) {
  const RefusalContext context{status.id, status.path,
                               status.route_class() ? std::string(to_string(*status.route_class()))
                                                    : std::string(k_review_required),
                               slice != nullptr ? slice->name : ""};
  Output output;
  output.code = ExitCode::refused;
  if (args.format == Format::json) {
    TPULAUNCH_TRY(output.out, json_text(refusal_json(context, refusal)));
  } else {
    output.err = render_refusal_text(context, refusal);
  }
  return output;
}

// The command's order: the rules of options alone (before any file is read), the run record and the
// script, the route (or its refusal), the request's typed options, then one backend and one form.
Result<Output> run_plan(PlanArgs args, const Globals& globals) {
  PlanRequest request = request_of(args);
  TPULAUNCH_CHECK(validate_options(request));
  TPULAUNCH_TRY(const Catalog catalog, load_catalog(globals));
  TPULAUNCH_TRY(const Matrix matrix, load_matrix(globals));
  TPULAUNCH_TRY(const std::string id, script_id_from_argument(matrix, args.script));
  std::optional<RunView> resumed;
  if (!args.resume.empty()) {
    TPULAUNCH_TRY(resumed, find_run("./tpu-runs", args.resume, catalog));
    TPULAUNCH_CHECK(take_from_resumed(args, *resumed, id));
  }
  const Slice* slice = nullptr;
  if (!args.slice.empty()) {
    TPULAUNCH_TRY(slice, require_slice_for(request.backend(), catalog, args.slice));
  }
  TPULAUNCH_TRY(const Routing routing, route_script(matrix, id, slice, args.slices));
  const ScriptStatus& status = routing.status;
  const Decision& decision = routing.decision;
  if (resumed) {
    TPULAUNCH_CHECK(same_script(*resumed, status.actual_sha256));
  }
  if (!decision.allowed()) {
    return refused(args, status, slice, *decision.refusal);
  }
  request.topology = Topology{slice, args.slices_option->count() > 0 || args.slices_resumed ? args.slices : 1};
  TPULAUNCH_CHECK(map_options(request, args, globals, resumed ? &*resumed : nullptr));
  if (request.backend() == Backend::gke) {
    return run_gke_plan(args, status, *decision.route, request);
  }
  TPULAUNCH_TRY(const Plan plan, tpu_vm_plan(status, *decision.route, request));
  Output output;
  if (slice != nullptr) {
    output.err = zone_warning_line(catalog, request.options.zone, *slice);
  }
  if (args.format == Format::json) {
    TPULAUNCH_TRY(output.out, json_text(plan_json(plan)));
  } else if (args.format == Format::sh) {
    output.out = render_sh(plan);
  } else {
    output.out = render_text(plan);
  }
  return output;
}

std::string routing_rules_help() {
  std::string out = "Routing rules, checked in order (the first that refuses names itself):\n";
  for (const auto& rule : routing_rules()) {
    out += fmt::format("  {:<28} {}\n", rule.id, rule.summary);
  }
  return out;
}

} // namespace

Command setup_plan(CLI::App& parent, const Globals& globals) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* app = parent.add_subcommand("plan", "Route one script and print the exact gcloud pipeline");
  // Its options are registered when the command line names it (CLI11 calls this before parsing
  // the subcommand's words): a run pays for one subcommand's options, not all ten.
  app->preparse_callback([app, args](std::size_t /*remaining*/) {
    app->add_option("script", args->script, "script id (e.g. distributed-02) or path to its .py file")->required();
    app->add_option("args", args->args, "arguments for the script, after --")->type_name("ARG");
    app->add_option("--env", args->env, "set KEY=VALUE for the script (repeatable; any value)")
        ->type_name("KEY=VALUE")
        ->allow_extra_args(false);
    app->add_option("--slice", args->slice, "accelerator type, e.g. v5litepod-16; omit for the CPU route");
    add_tpu_options(*app, args->tpu);
    args->tpu.tpu_only.push_back(
        app->add_option("--checkpoint-dir", args->checkpoint_dir,
                        "gs://BUCKET[/PREFIX] exported to the program as TPU_CHECKPOINT_DIR (restoring is the script's "
                        "business); kept by --resume")
            ->type_name("URL"));
    args->tpu.tpu_only.push_back(
        app->add_option("--resume", args->resume,
                        "a new run linked to run RUN (a run id or its folder below ./tpu-runs): same script, slice, "
                        "TPU, checkpoint folder and capacity")
            ->type_name("RUN"));
    args->slices_option = app->add_option("--slices", args->slices,
                                          "run one program over N slices (Multislice, N >= 2): the nodes of one queued "
                                          "resource with --queued, else existing TPUs <tpu>-0 ... <tpu>-(N-1)");
    args->tpu.tpu_only.push_back(args->slices_option);
    add_format_option(*app, args->format, {Format::text, Format::sh, Format::json, Format::yaml});
    CLI::Option_group& gke = *app->add_option_group("GKE", "run as a JobSet on a GKE cluster (docs/gke.md)");
    args->gke_option =
        gke.add_option("--gke", args->gke.cluster, "the GKE cluster to run on, as a JobSet")->type_name("CLUSTER");
    gke.add_option("--location", args->gke.location, "the cluster's zone or region (gcloud's --location)");
    gke.add_option("--namespace", args->gke.name_space, "the namespace of the run's JobSet and ConfigMap")
        ->default_str("default");
    gke.add_option("--image", args->gke.image,
                   "the container image every pod runs (bash, python with jax[tpu], gcloud)");
    gke.add_option("--manifest", args->manifest,
                   "also write the manifest (ConfigMap and JobSet, JSON) to FILE, atomically")
        ->type_name("FILE");
    gke.fallthrough(false);
    args->app = app;
    app->add_flag("--course", args->course, "emit the course's own stage and run lines byte for byte (no digest check)");
    args->verify_option =
        app->add_option("--verify", args->verify, "what verify checks: " + verify_kind_list(VerifyNone::included))
            ->check(CLI::IsMember(verify_kind_names(VerifyNone::included)));
    // Made only when help is shown; CLI11 adds the final newline after a callback's text.
    app->footer([] {
      std::string text =
          fmt::format("Examples:\n"
                      "  tpulaunch plan distributed-02\n"
                      "  tpulaunch plan collective-update --slice v5litepod-16 --tpu my-pod --zone us-west4-a\n"
                      "  tpulaunch plan collective-update --slice v5litepod-16 --format sh > run.sh && bash run.sh\n"
                      "  tpulaunch plan train --slice v5litepod-16 --env SEED=1 -- --steps 100\n\n{}\n{}",
                      routing_rules_help(), exit_codes_help());
      text.pop_back();
      return text;
    });
  });
  return Command{app, [args, &globals]() { return run_plan(*args, globals); }};
}

} // namespace tpulaunch::cli
