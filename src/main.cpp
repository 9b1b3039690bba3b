// tpulaunch: wires CLI11 to the core. The only place that writes to stdout/stderr, configures
// logging and picks the exit code; one top-level catch.
#include <cstdio>
#include <exception>
#include <string>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.hpp"

namespace {

using tpulaunch::ExitCode;
using tpulaunch::to_int;

void write_all(std::FILE* stream, const std::string& text) {
  if (!text.empty()) {
    std::fwrite(text.data(), 1, text.size(), stream);
    std::fflush(stream);
  }
}

int fail(const tpulaunch::Error& error) {
  write_all(stderr, fmt::format("tpulaunch: error: {}\n", error.message));
  return to_int(error.code);
}

// The subcommands, in the order --help lists them.
using Setup = tpulaunch::cli::Command (*)(CLI::App&, const tpulaunch::cli::Globals&);
constexpr Setup k_commands[] = {
    tpulaunch::cli::setup_plan,  tpulaunch::cli::setup_classify, tpulaunch::cli::setup_review,
    tpulaunch::cli::setup_check, tpulaunch::cli::setup_slices,   tpulaunch::cli::setup_slice,
    tpulaunch::cli::setup_discover, tpulaunch::cli::setup_verify,
};

} // namespace

int main(int argc, char** argv) {
  tpulaunch::cli::Globals globals;
  CLI::App app{"tpulaunch: route Python/JAX scripts onto Cloud TPU VMs and Pod slices, safely"};
  app.set_version_flag("--version", std::string("tpulaunch ") + TPULAUNCH_VERSION);
  app.require_subcommand(1);
  app.fallthrough(); // global options may follow the subcommand: tpulaunch plan x --matrix m.json
  app.add_option("-C", globals.directory, "run as if started in DIR")->type_name("DIR");
  app.add_option("--catalog", globals.catalog, "slice catalog (default: the one built in)")
      ->envname("TPULAUNCH_CATALOG")->type_name("FILE");
  app.add_option("--matrix", globals.matrix, "execution matrix")
      ->envname("TPULAUNCH_MATRIX")->default_str("execution-matrix.json")->type_name("FILE");
  app.add_flag("-v,--verbose", globals.verbosity, "log more to stderr (repeatable)");
  app.footer(tpulaunch::cli::exit_codes_help());

  std::vector<tpulaunch::cli::Command> commands;
  for (const Setup setup : k_commands) {
    commands.push_back(setup(app, globals));
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

    auto logger = spdlog::stderr_logger_st("tpulaunch");
    logger->set_pattern("tpulaunch: %l: %v");
    logger->set_level(globals.verbosity >= 2 ? spdlog::level::trace
                      : globals.verbosity == 1 ? spdlog::level::debug
                                               : spdlog::level::warn);
    spdlog::set_default_logger(logger);

    if (!globals.directory.empty() && ::chdir(globals.directory.c_str()) != 0) {
      return fail(tpulaunch::usage_error(fmt::format("-C '{}': cannot change to that folder", globals.directory)));
    }
    for (const auto& command : commands) {
      if (command.app->parsed()) {
        auto result = command.run();
        if (!result) {
          return fail(result.error());
        }
        write_all(stdout, result->out);
        write_all(stderr, result->err);
        return to_int(result->code);
      }
    }
    return fail(tpulaunch::usage_error("no command given; see tpulaunch --help"));
  } catch (const std::exception& e) {
    // Expected failures are values; reaching this is a bug, reported as a run-time failure.
    return fail(tpulaunch::failure(fmt::format("internal error: {}", e.what())));
  }
}
