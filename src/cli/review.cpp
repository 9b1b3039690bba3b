// tpulaunch review: record (or update) a script's reviewed class in the matrix, atomically.
#include <fmt/format.h>

#include "commands.hpp"
#include "tpulaunch/classifier.hpp"
#include "tpulaunch/matrix_file.hpp"
#include "tpulaunch/overrides.hpp"
#include "tpulaunch/review.hpp"

namespace tpulaunch::cli {
namespace {

struct ReviewArgs {
  std::string script;
  std::string script_class;
  std::string by;
  std::string note;
  std::string override_reason;
};

Result<Output> run_review(const ReviewArgs& args, const Globals& globals) {
  ReviewRequest request;
  request.script_class = *parse_script_class(args.script_class);
  request.reviewed_by = args.by;
  request.note = args.note;
  request.override_reason = args.override_reason;
  request.reviewed_at = utc_now_iso8601();
  MatrixEntry recorded;
  auto edit = [&](Matrix& matrix) -> Status {
    TPULAUNCH_TRY(request.id, script_id_from_argument(matrix, args.script));
    TPULAUNCH_TRY(const ScriptStatus status, resolve_script(matrix, request.id));
    if (status.state == ReviewState::missing_file || status.actual_sha256.empty()) {
      return config_error(fmt::format("cannot review '{}': {} does not exist", request.id, status.path));
    }
    TPULAUNCH_TRY(MatrixEntry entry, make_review_entry(request, status.source, classify_source(status.source)));
    recorded = entry;
    record_review(matrix, std::move(entry));
    return Ok{};
  };
  if (auto missing = matrix_missing(globals)) {
    return *missing;
  }
  TPULAUNCH_TRY(const Matrix matrix, update_matrix_file(globals.matrix, edit));
  (void)matrix;
  Output output;
  output.out = fmt::format("recorded {} as {} (sha256 {}) by {} at {} in {}\n", recorded.id, recorded.class_name,
                           recorded.sha256, recorded.reviewed_by, recorded.reviewed_at, globals.matrix);
  for (const auto& o : recorded.overrides) {
    output.out += fmt::format("  override: {}: {}\n", describe_override(o), o.reason);
  }
  return output;
}

} // namespace

Command setup_review(CLI::App& parent, const Globals& globals) {
  auto args = std::make_shared<ReviewArgs>();
  CLI::App* app = parent.add_subcommand("review", "Record a script's reviewed class and digest in the matrix");
  app->add_option("script", args->script, "script id or path")->required();
  std::vector<std::string> classes;
  for (const auto& info : k_script_classes) {
    classes.emplace_back(info.name);
  }
  app->add_option("--class", args->script_class, "cpu-only, single-host-compatible or multi-host-qualified")
      ->required()
      ->check(CLI::IsMember(classes));
  app->add_option("--by", args->by, "reviewer name")->required();
  app->add_option("--note", args->note, "what the reviewer checked");
  app->add_option("--override", args->override_reason,
                  "accept evidence that contradicts the class, for this reason (recorded with the evidence lines)");
  app->footer("Examples:\n  tpulaunch review distributed-02 --class cpu-only --by alice\n"
              "  tpulaunch review collective-update --class multi-host-qualified --by bob --note 'checked barrier'\n"
              "The matrix is rewritten atomically, under a lock, with stable key order.\n");
  return Command{app, [args, &globals]() { return run_review(*args, globals); }};
}

} // namespace tpulaunch::cli
