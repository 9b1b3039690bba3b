// tpulaunch review: record (or update) a script's reviewed class in the matrix, atomically.
#include <fmt/format.h>

#include "commands.hpp"
#include "tpulaunch/classify/classifier.hpp"
#include "tpulaunch/matrix/matrix_file.hpp"
#include "tpulaunch/matrix/overrides.hpp"
#include "tpulaunch/matrix/review.hpp"
#include "tpulaunch/util/utf8.hpp"

namespace tpulaunch::cli {
namespace {

struct ReviewArgs {
  std::string script;
  std::string script_class;
  std::string by;
  std::string note;
  std::string override_reason;
  std::string jax_platforms;
  std::string proves;
  std::string initialize_condition;
};

// The matrix is JSON, whose text is UTF-8: a value for it that is not is refused, named, before
// the matrix is touched (JSON cannot carry it, and the entry would otherwise hold other bytes).
Status check_utf8_values(const ReviewArgs& args) {
  for (const auto& [flag, value] :
       {std::pair{"--by", &args.by}, std::pair{"--note", &args.note}, std::pair{"--override", &args.override_reason}}) {
    if (const auto offset = first_non_utf8_byte(*value)) {
      return usage_error(fmt::format("{} '{}': byte 0x{:02x} at offset {} is not UTF-8, and the matrix (JSON) holds "
                                     "UTF-8 text only",
                                     flag, printable(*value), static_cast<unsigned char>((*value)[*offset]), *offset));
    }
  }
  return Ok{};
}

Result<Output> run_review(const ReviewArgs& args, const Globals& globals) {
  TPULAUNCH_CHECK(check_utf8_values(args));
  ReviewRequest request;
  request.script_class = *parse_script_class(args.script_class);
  request.reviewed_by = args.by;
  request.note = args.note;
  request.override_reason = args.override_reason;
  request.jax_platforms = args.jax_platforms;
  if (!args.proves.empty()) {
    request.proves = parse_proves(args.proves);
  }
  request.initialize_condition = args.initialize_condition;
  request.reviewed_at = utc_now_iso8601();
  MatrixEntry recorded;
  auto edit = [&](Matrix& matrix) -> Status {
    TPULAUNCH_TRY(request.id, script_id_from_argument(matrix, args.script));
    TPULAUNCH_TRY(const ScriptStatus status, resolve_script(matrix, request.id));
    if (status.state == ReviewState::missing_file || status.actual_sha256.empty()) {
      return config_error(fmt::format("cannot review '{}': {} does not exist", request.id, status.path));
    }
    if (status.helper) {
      return usage_error(fmt::format("cannot review '{}': {}", request.id, status.explanation()));
    }
    // The script with the course files it brings: their evidence counts, their digests are pinned.
    TPULAUNCH_TRY(Lesson lesson, read_lesson(matrix, status));
    for (const auto& file : lesson.files) {
      if (file.sha256.empty()) {
        return config_error(fmt::format("cannot review '{}': {}, declared in its entry's \"files\", does not exist",
                                        request.id, file.path));
      }
    }
    request.files = reviewed_files(lesson);
    TPULAUNCH_TRY(MatrixEntry entry, make_review_entry(request, status.source, lesson.classification));
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
  if (!recorded.jax_platforms.empty()) {
    output.out += fmt::format("  TPU routes set JAX_PLATFORMS={} (in place of tpu)\n", recorded.jax_platforms);
  }
  if (recorded.script_class != ScriptClass::cpu_only) {
    output.out +=
        recorded.proves
            ? fmt::format("  proves {}: plan verifies its runs with --verify {}\n", to_string(*recorded.proves),
                          to_string(*recorded.proves))
            : std::string("  proves nothing declared: plan verifies its runs by their logs and every worker's "
                          "recorded status 0, and checks no training claim (--proves declares one)\n");
  }
  if (const auto& acceptance = recorded.initialize_condition) {
    output.out += fmt::format("  initialize condition accepted at line {}{}: {}\n", acceptance->line,
                              acceptance->file.empty() ? "" : " of " + acceptance->file, acceptance->reason);
  }
  for (const auto& file : recorded.files) {
    output.out += fmt::format("  with {} (sha256 {}){}\n", file.path, file.sha256, file.declared ? ", declared" : "");
  }
  for (const auto& o : recorded.overrides) {
    output.out += fmt::format("  override: {}: {}\n", describe_override(o), o.reason);
  }
  return output;
}

} // namespace

Command setup_review(CLI::App& parent, const Globals& globals) {
  auto args = std::make_shared<ReviewArgs>();
  CLI::App* app = parent.add_subcommand("review", "Record a script's reviewed class and digest in the matrix");
  // Its options are registered when the command line names it (CLI11 calls this before parsing
  // the subcommand's words): a run pays for one subcommand's options, not all ten.
  app->preparse_callback([app, args](std::size_t /*remaining*/) {
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
    app->add_option("--jax-platforms", args->jax_platforms,
                    "JAX_PLATFORMS for TPU routes in place of tpu: tpu,cpu lets JAX fall back to the CPU (recorded; "
                    "plan then accepts --env JAX_PLATFORMS with this value)")
        ->type_name("LIST");
    std::vector<std::string> proves;
    for (const Proves kind : k_proves) {
      proves.emplace_back(to_string(kind));
    }
    app->add_option("--proves", args->proves,
                    "what its runs prove: training (worker-<i>.json receipts and a checkpoint), discovery, or logs; "
                    "plan's verify step checks it (recorded; without it, logs and every worker's recorded status 0)")
        ->check(CLI::IsMember(proves))
        ->type_name("KIND");
    app->add_option("--initialize-condition", args->initialize_condition,
                    "accept a jax.distributed.initialize() that runs only under a condition, for this reason: what "
                    "makes it hold on every host (recorded with the call's line; plan repeats it in its notes)")
        ->type_name("REASON");
    app->footer("Examples:\n  tpulaunch review distributed-02 --class cpu-only --by alice\n"
                "  tpulaunch review collective-update --class multi-host-qualified --by bob --proves training\n"
                "  tpulaunch review host-callback --class single-host-compatible --by bob --jax-platforms tpu,cpu\n"
                "The matrix is rewritten atomically, under a lock, with stable key order.\n");
  });
  return Command{app, [args, &globals]() { return run_review(*args, globals); }};
}

} // namespace tpulaunch::cli
