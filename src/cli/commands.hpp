#pragma once
// The CLI layer: one file per subcommand. Each `setup_<cmd>` registers its options on the parent
// CLI11 app and returns a Command whose `run` calls the core and returns what to print. Only
// main.cpp writes to stdout/stderr and chooses the exit code.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tpulaunch/catalog/backend.hpp"
#include "tpulaunch/catalog/catalog.hpp"
#include "tpulaunch/json/json_text.hpp"
#include "tpulaunch/matrix/matrix.hpp"
#include "tpulaunch/plan/plan.hpp"
#include "tpulaunch/util/error.hpp"

namespace tpulaunch::cli {

// The matrix a course keeps at its root, when --matrix is not given.
inline constexpr const char* k_default_matrix = "execution-matrix.json";

// Options shared by every subcommand.
struct Globals {
  std::string directory;   // -C DIR
  std::string catalog;     // --catalog FILE / TPULAUNCH_CATALOG; empty: the embedded catalog
  std::string matrix = k_default_matrix; // --matrix FILE / TPULAUNCH_MATRIX
  int verbosity = 0;
  std::string start_directory; // the folder tpulaunch was started in (before -C), absolute
  bool matrix_given = false;   // --matrix or $TPULAUNCH_MATRIX: used as given, never searched for
  // Set when no matrix was given and none was found here or above (locate_matrix): the folder
  // the search started in, which the error names.
  std::string matrix_searched_from;
  const CLI::Option* matrix_option = nullptr; // counts a value from $TPULAUNCH_MATRIX as given
};

// What a command produced: the product for stdout, notes for stderr, and the exit code.
struct Output {
  std::string out;
  std::string err;
  ExitCode code = ExitCode::success;
};

struct Command {
  CLI::App* app = nullptr;
  std::function<Result<Output>()> run;
};

// Registers the global options and every subcommand on `app` (app.cpp); one Command each.
std::vector<Command> setup_app(CLI::App& app, Globals& globals);

Command setup_init(CLI::App& parent, const Globals& globals);
Command setup_plan(CLI::App& parent, const Globals& globals);
Command setup_slices(CLI::App& parent, const Globals& globals);
Command setup_slice(CLI::App& parent, const Globals& globals);
Command setup_classify(CLI::App& parent, const Globals& globals);
Command setup_review(CLI::App& parent, const Globals& globals);
Command setup_check(CLI::App& parent, const Globals& globals);
Command setup_discover(CLI::App& parent, const Globals& globals);
Command setup_verify(CLI::App& parent, const Globals& globals);
Command setup_guard(CLI::App& parent, const Globals& globals);
Command setup_stage(CLI::App& parent, const Globals& globals);
Command setup_runs(CLI::App& parent, const Globals& globals);

// The options every TPU pipeline takes (plan, discover), and the PlanOptions they make.
struct TpuArgs {
  std::string tpu;
  std::string zone;
  std::string project;
  std::string run_id;
  std::string python;
  int parallel = 8;
  bool bootstrap = false;
  bool teardown = false;
  // The TPU's life around the run (LifecycleOptions).
  bool create = false;
  bool queued = false;
  bool spot = false;
  bool preemptible = false;
  bool reserved = false;
  bool guaranteed = false;
  LifecycleOptions lifecycle; // all but the durations, which plan_options parses from the text below
  std::string valid_until, ready_timeout, poll, timeout, grace;
  std::string results; // --results gs://BUCKET[/PREFIX]
  bool internal_ip = false;        // --internal-ip
  bool tunnel_through_iap = false; // --tunnel-through-iap
  // The options that mean something only when a TPU is used (--tpu, --bootstrap, --teardown,
  // --parallel, --results and the TPU's life options), to refuse them on the CPU route.
  std::vector<const CLI::Option*> tpu_only;
};
void add_tpu_options(CLI::App& app, TpuArgs& args);
// The names of the TPU-only flags given ("--spot"), in the order they are registered.
std::vector<std::string> given_flags(const TpuArgs& args);
// The PlanOptions these make (or a usage Error for flags that exclude each other), with the
// context every generated script carries: the folder the plan was made in, the matrix (when
// `with_matrix`) and catalog as absolute paths, and this binary as the program verify runs.
enum class WithMatrix { no, yes };
Result<PlanOptions> plan_options(const TpuArgs& args, const Globals& globals, WithMatrix with_matrix);
// The absolute path of the running tpulaunch ("tpulaunch" when it cannot be found).
std::string own_path();

// Shared helpers (common.cpp).
// The one line an Error prints on stderr: "tpulaunch: error: <message>\n", or "tpulaunch:
// refused: <message>\n" for a refusal (exit 3), as plan's refusals read.
std::string message_line(const Error& error);
Result<Catalog> load_catalog(const Globals& globals);
// A slice's GKE facts for `slice`/`slices --format json`: {"accelerator", "topology",
// "machine_type", "nodes", "chips_per_node", "devices_per_node"}, or null when the catalog has none.
nlohmann::ordered_json gke_json(const Slice& slice);
// The backends that reach `slice`, as to_string(Backend) names them.
std::vector<std::string> slice_routes(const Slice& slice, const Catalog& catalog);
// When no matrix was given, the nearest execution-matrix.json at or above the current folder
// becomes `globals.matrix` (as git finds .git); when there is none, `matrix_searched_from` says
// where the search started, and load_matrix / matrix_missing() name it. Not for init.
void locate_matrix(Globals& globals);
// The error for a matrix that was not given and not found; nullopt when there is a matrix to read.
std::optional<Error> matrix_missing(const Globals& globals);
Result<Matrix> load_matrix(const Globals& globals);
// A usage Error for the first word no command took (an unknown command or option), with
// CLI11-style suggestions: the nearest command, or the nearest option of the command given.
std::optional<Error> unknown_arguments(const CLI::App& app, const std::vector<Command>& commands);
// The usage Error for CLI11's parse error `error`, in tpulaunch's words where CLI11's are its own:
// an option that takes one value, given several times, is named with the values it got; one given
// no value (last on the line, or `--python=`) says so.
Error parse_error(const CLI::App& app, const CLI::ParseError& error);
// A validator for a value option whose empty value would otherwise pass for "not given" (--python
// '' is a mistake, not the default): "" for a value, the reason for an empty one.
std::string refuse_empty(const std::string& value);
// "tpulaunch: warning: ...\n" when the catalog's zone table says `zone` does not offer `slice` or
// is not a known zone (Catalog::zone_warning); "" otherwise. For stderr, never a refusal.
std::string zone_warning_line(const Catalog& catalog, std::string_view zone, const Slice& slice);
// The exit-code table as help text.
std::string exit_codes_help();
// The names of the verify kinds (k_verify_kinds), for --verify and --kind; `none` only when a
// plan may skip verify.
enum class VerifyNone { excluded, included };
std::vector<std::string> verify_kind_names(VerifyNone none);
// "training, discovery, logs or none": the same names for help text.
std::string verify_kind_list(VerifyNone none);
// An output format, by the name --format takes. Each subcommand offers some of them.
enum class Format { text, table, sh, json, svg, github, yaml };
// Adds --format with the given choices (the first is the default); any other name is a usage error
// that lists the choices.
void add_format_option(CLI::App& app, Format& format, std::initializer_list<Format> choices);

} // namespace tpulaunch::cli
