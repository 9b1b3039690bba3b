// tpulaunch init: write a minimal execution matrix for a new course, and say what to run next.
#include <algorithm>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.hpp"
#include "tpulaunch/matrix/exercises.hpp"
#include "tpulaunch/matrix/matrix_file.hpp"
#include "tpulaunch/shell/shell.hpp"

namespace tpulaunch::cli {
namespace {

struct InitArgs {
  std::string exercises_dir = "public/exercises";
};

// "tpulaunch", with the -C and --matrix this init was given, so that every next step pasted from
// where init ran works on the same course.
std::string command_prefix(const Globals& globals) {
  std::string prefix = "tpulaunch";
  if (!globals.directory.empty()) {
    prefix += " -C " + shell_quote(globals.directory);
  }
  if (globals.matrix_given) {
    prefix += " --matrix " + shell_quote(globals.matrix);
  }
  return prefix;
}

Result<Output> run_init(const InitArgs& args, const Globals& globals) {
  TPULAUNCH_TRY(const Matrix matrix, init_matrix_file(globals.matrix, args.exercises_dir));
  Output output;
  const std::string folder = matrix.exercises_path();
  std::string found;
  if (auto listing = list_exercises(matrix)) {
    found = fmt::format("{} found, none reviewed", counted(listing->ids.size(), "script"));
    if (!matrix.helpers.empty()) {
      // A helper is staged with the scripts that import it and never reviewed alone; a file that
      // is a lesson of its own as well is taken out of "helpers" by hand.
      found += fmt::format("; {} they import listed as \"helpers\", not scripts: {}",
                           counted(matrix.helpers.size(), "course file"), fmt::join(matrix.helpers, ", "));
    }
  } else {
    found = listing.error().message;
  }
  // Lines to paste: quoted, and aligned so the comments start in one column.
  const std::string prefix = command_prefix(globals);
  const std::string lines[] = {prefix + " classify " + shell_quote(folder), prefix + " review ID --class CLASS --by NAME",
                               prefix + " check --strict"};
  std::size_t width = 0;
  for (const auto& line : lines) {
    width = std::max(width, line.size());
  }
  output.out = fmt::format("created {} for the scripts in {} ({})\n"
                           "next:\n"
                           "  {:<{}}  # read each script's evidence (every subfolder too)\n"
                           "  {:<{}}  # record what a person decided\n"
                           "  {:<{}}  # the CI gate (docs/ci.md)\n",
                           globals.matrix, folder, found, lines[0], width, lines[1], width, lines[2], width);
  return output;
}

} // namespace

Command setup_init(CLI::App& parent, const Globals& globals) {
  auto args = std::make_shared<InitArgs>();
  CLI::App* app = parent.add_subcommand("init", "Write a minimal execution matrix for a new course");
  // Its options are registered when the command line names it (CLI11 calls this before parsing
  // the subcommand's words): a run pays for one subcommand's options, not all ten.
  app->preparse_callback([app, args](std::size_t /*remaining*/) {
    app->add_option("--exercises-dir", args->exercises_dir, "the course's scripts, relative to the matrix's folder")
        ->default_str("public/exercises")
        ->type_name("DIR");
    app->footer("Examples:\n  tpulaunch init\n  tpulaunch -C my-course init --exercises-dir lessons\n"
                "Writes --matrix (default execution-matrix.json) atomically and never over an existing file (exit 1).\n"
                "The exercises folder must exist (exit 2 otherwise, and nothing is written).\n");
  });
  return Command{app, [args, &globals]() { return run_init(*args, globals); }};
}

} // namespace tpulaunch::cli
