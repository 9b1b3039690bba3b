// tpulaunch: wires CLI11 to the core. The only place that writes to stdout/stderr, configures
// logging and picks the exit code; one top-level catch.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <string_view>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.hpp"

namespace {

using tpulaunch::ExitCode;
using tpulaunch::to_int;

// The whole of `text` to file descriptor `fd` (1 or 2), straight to write(2): stdio would copy a
// plan through its buffer first. A write that fails (a closed pipe) ends it quietly.
void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t written = ::write(fd, text.data(), text.size());
    if (written < 0 && errno == EINTR) {
      continue;
    }
    if (written <= 0) {
      return;
    }
    text.remove_prefix(static_cast<std::size_t>(written));
  }
}

int fail(const tpulaunch::Error& error) {
  write_all(STDERR_FILENO, tpulaunch::cli::message_line(error));
  return to_int(error.code);
}

// The subcommands, in the order --help lists them; `name` is the one its setup registers.
using Setup = tpulaunch::cli::Command (*)(CLI::App&, const tpulaunch::cli::Globals&);
struct CommandEntry {
  std::string_view name;
  Setup setup;
};
constexpr CommandEntry k_commands[] = {
    {"init", tpulaunch::cli::setup_init},
    {"plan", tpulaunch::cli::setup_plan},         {"classify", tpulaunch::cli::setup_classify},
    {"review", tpulaunch::cli::setup_review},     {"check", tpulaunch::cli::setup_check},
    {"slices", tpulaunch::cli::setup_slices},     {"slice", tpulaunch::cli::setup_slice},
    {"discover", tpulaunch::cli::setup_discover}, {"verify", tpulaunch::cli::setup_verify},
    {"guard", tpulaunch::cli::setup_guard},
};

// The subcommand the command line names, found as CLI11 will find it: the first argument equal to
// a subcommand name that is not the value of a global option. Empty when none is named.
std::string_view named_command(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") {
      break;
    }
    if (arg == "-C" || arg == "--catalog" || arg == "--matrix") {
      ++i; // the option's value, even when it spells a subcommand
      continue;
    }
    for (const auto& command : k_commands) {
      if (arg == command.name) {
        return command.name;
      }
    }
  }
  return {};
}

} // namespace

int main(int argc, char** argv) {
  tpulaunch::cli::Globals globals;
  CLI::App app{"tpulaunch: route Python/JAX scripts onto Cloud TPU VMs and Pod slices, safely"};
  app.set_version_flag("--version", std::string("tpulaunch ") + TPULAUNCH_VERSION);
  app.fallthrough(); // global options may follow the subcommand: tpulaunch plan x --matrix m.json
  app.allow_extras(); // unknown words are reported below, with suggestions
  app.add_option("-C", globals.directory, "run as if started in DIR")->type_name("DIR");
  app.add_option("--catalog", globals.catalog, "slice catalog (default: the one built in)")
      ->envname("TPULAUNCH_CATALOG")->type_name("FILE");
  const CLI::Option* matrix_option =
      app.add_option("--matrix", globals.matrix,
                     "execution matrix (default: execution-matrix.json here or in the nearest folder above)")
          ->envname("TPULAUNCH_MATRIX")->default_str(tpulaunch::cli::k_default_matrix)->type_name("FILE");
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
                       tpulaunch::cli::exit_codes_help();
    text.pop_back();
    return text;
  });

  // Only the named subcommand registers its options (every subcommand does when none is named, so
  // --help and errors see them all): CLI11 spends about 8 k instructions on an option, and the
  // options of the seven subcommands not run were a quarter of a whole plan.
  const std::string_view named = named_command(argc, argv);
  std::vector<tpulaunch::cli::Command> commands;
  for (const auto& [name, setup] : k_commands) {
    if (named.empty() || name == named) {
      commands.push_back(setup(app, globals));
      commands.back().app->allow_extras();
      if (commands.back().app->get_name() != name) {
        return fail(tpulaunch::failure(fmt::format("internal error: subcommand '{}' registers as '{}'", name,
                                                   commands.back().app->get_name())));
      }
    }
  }

  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      if (e.get_exit_code() == 0) {
        return app.exit(e); // --help, --version: printed to stdout
      }
      return fail(tpulaunch::usage_error(e.what()));
    }
    if (auto unknown = tpulaunch::cli::unknown_arguments(app, commands)) {
      return fail(*unknown);
    }

    auto logger = spdlog::stderr_logger_mt("tpulaunch");
    logger->set_pattern("tpulaunch: %l: %v");
    logger->set_level(globals.verbosity >= 2 ? spdlog::level::trace
                      : globals.verbosity == 1 ? spdlog::level::debug
                                               : spdlog::level::warn);
    spdlog::set_default_logger(logger);

    globals.start_directory = std::filesystem::current_path().string();
    if (!globals.directory.empty() && ::chdir(globals.directory.c_str()) != 0) {
      return fail(tpulaunch::usage_error(fmt::format("-C '{}': cannot change to that folder", globals.directory)));
    }
    // CLI11 counts a value from $TPULAUNCH_MATRIX as given. init writes a new matrix here, so it
    // never looks further up.
    globals.matrix_given = matrix_option->count() > 0;
    if (named != "init") {
      tpulaunch::cli::locate_matrix(globals);
    }
    for (const auto& command : commands) {
      if (command.app->parsed()) {
        auto result = command.run();
        if (!result) {
          return fail(result.error());
        }
        write_all(STDOUT_FILENO, result->out);
        write_all(STDERR_FILENO, result->err);
        // exit() rather than return, as ninja's main does: the work is done, and taking the
        // command-line parser and the result apart again would cost a plan 2% more for nothing.
        // (Static destructors and atexit handlers, LeakSanitizer's check among them, still run.)
        std::exit(to_int(result->code));
      }
    }
    return fail(tpulaunch::usage_error("no subcommand given; see tpulaunch --help"));
  } catch (const std::exception& e) {
    // Expected failures are values; reaching this is a bug, reported as a run-time failure.
    return fail(tpulaunch::failure(fmt::format("internal error: {}", e.what())));
  }
}
