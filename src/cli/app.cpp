// The command line as one CLI11 app: the global options, then every subcommand (one file each),
// registered in the order --help lists them.
#include <string>

#include "commands.hpp"

namespace tpulaunch::cli {

std::vector<Command> setup_app(CLI::App& app, Globals& globals) {
  app.set_version_flag("--version", std::string("tpulaunch ") + TPULAUNCH_VERSION);
  app.require_subcommand(1);
  app.fallthrough(); // global options may follow the subcommand: tpulaunch plan x --matrix m.json
  app.allow_extras(); // unknown words are reported by unknown_arguments, with suggestions
  app.add_option("-C", globals.directory, "run as if started in DIR")->type_name("DIR");
  app.add_option("--catalog", globals.catalog, "slice catalog (default: the one built in)")
      ->envname("TPULAUNCH_CATALOG")
      ->type_name("FILE");
  globals.matrix_option =
      app.add_option("--matrix", globals.matrix,
                     "execution matrix (default: execution-matrix.json here or in the nearest folder above)")
          ->envname("TPULAUNCH_MATRIX")
          ->default_str(k_default_matrix)
          ->type_name("FILE");
  app.add_flag("-v,--verbose", globals.verbosity, "log each decision to stderr (repeatable)");
  // Help text is made only when help is shown (CLI11 adds the final newline after a callback's text).
  app.footer([] {
    std::string text = "Examples:\n"
                       "  tpulaunch -C my-course init                 # a new course: a minimal execution-matrix.json\n"
                       "  tpulaunch classify public/exercises         # evidence with file:line, a suggested class\n"
                       "  tpulaunch review tpu-hello --class single-host-compatible --by alice\n"
                       "  tpulaunch plan distributed-02               # the CPU route\n"
                       "  tpulaunch plan collective-update --slice v5litepod-16 --tpu my-pod --zone us-west4-a\n"
                       "  tpulaunch check --strict --format github    # the CI gate\n"
                       "  tpulaunch slice v5litepod-16                # hosts, devices, idle chips, zones\n"
                       "Every command has --help with its own examples; docs/cli.md is the reference.\n\n" +
                       exit_codes_help();
    text.pop_back();
    return text;
  });

  std::vector<Command> commands;
  for (auto* setup : {setup_init, setup_plan, setup_classify, setup_review, setup_check, setup_slices, setup_slice,
                      setup_discover, setup_verify, setup_guard, setup_stage, setup_runs}) {
    commands.push_back(setup(app, globals));
    commands.back().app->allow_extras();
  }
  return commands;
}

} // namespace tpulaunch::cli
