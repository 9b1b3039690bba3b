// tpulaunch init: write a minimal execution matrix for a new course, and say what to run next.
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.hpp"
#include "tpulaunch/exercises.hpp"
#include "tpulaunch/matrix_file.hpp"
#include "tpulaunch/shell.hpp"

namespace tpulaunch::cli {
namespace {

struct InitArgs {
  std::string exercises_dir = "public/exercises";
};

Result<Output> run_init(const InitArgs& args, const Globals& globals) {
  TPULAUNCH_TRY(const Matrix matrix, init_matrix_file(globals.matrix, args.exercises_dir));
  Output output;
  std::error_code ec;
  const std::string folder = matrix.exercises_path();
  std::string found;
  if (!std::filesystem::is_directory(folder, ec)) {
    found = "it does not exist yet";
  } else if (auto listing = list_exercises(matrix)) {
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
  output.out = fmt::format("created {} for the scripts in {} ({})\n"
                           "next:\n"
                           "  tpulaunch classify {}/*.py                      # read each script's evidence\n"
                           "  tpulaunch review ID --class CLASS --by NAME     # record what a person decided\n"
                           "  tpulaunch check --strict                        # the CI gate (docs/ci.md)\n",
                           globals.matrix, folder, found, shell_quote(folder)); // a line to paste: quoted
  return output;
}

} // namespace

Command setup_init(CLI::App& parent, const Globals& globals) {
  auto args = std::make_shared<InitArgs>();
  CLI::App* app = parent.add_subcommand("init", "Write a minimal execution matrix for a new course");
  app->add_option("--exercises-dir", args->exercises_dir, "the course's scripts, relative to the matrix's folder")
      ->default_str("public/exercises")
      ->type_name("DIR");
  app->footer("Examples:\n  tpulaunch init\n  tpulaunch -C my-course init --exercises-dir lessons\n"
              "Writes --matrix (default execution-matrix.json) atomically and never over an existing file.\n");
  return Command{app, [args, &globals]() { return run_init(*args, globals); }};
}

} // namespace tpulaunch::cli
