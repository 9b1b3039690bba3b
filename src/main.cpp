// tpulaunch: wires CLI11 to the core. The only place that writes to stdout/stderr, configures
// logging and picks the exit code; one top-level catch.
#include <cerrno>
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
  return tpulaunch::to_int(error.code);
}

} // namespace

int main(int argc, char** argv) {
  namespace cli = tpulaunch::cli;
  cli::Globals globals;
  CLI::App app{"tpulaunch: route Python/JAX scripts onto Cloud TPU VMs and Pod slices, safely"};
  try {
    const std::vector<cli::Command> commands = cli::setup_app(app, globals);
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      if (e.get_exit_code() == 0) {
        return app.exit(e); // --help, --version: printed to stdout
      }
      // No subcommand: a misspelt one is named, with the nearest (unknown_arguments).
      if (app.get_subcommands().empty() && dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
        const auto unknown = cli::unknown_arguments(app, commands);
        return fail(unknown ? *unknown : tpulaunch::usage_error("no subcommand given; see tpulaunch --help"));
      }
      return fail(cli::parse_error(app, e));
    }
    if (auto unknown = cli::unknown_arguments(app, commands)) {
      return fail(*unknown);
    }

    auto logger = spdlog::stderr_logger_mt("tpulaunch");
    logger->set_pattern("tpulaunch: %l: %v");
    logger->set_level(globals.verbosity >= 2   ? spdlog::level::trace
                      : globals.verbosity == 1 ? spdlog::level::debug
                                               : spdlog::level::warn);
    spdlog::set_default_logger(logger);

    globals.start_directory = std::filesystem::current_path().string();
    if (!globals.directory.empty() && ::chdir(globals.directory.c_str()) != 0) {
      return fail(tpulaunch::usage_error(fmt::format("-C '{}': cannot change to that folder", globals.directory)));
    }
    // require_subcommand(1): exactly one was parsed.
    const CLI::App& given = *app.get_subcommands().front();
    // CLI11 counts a value from $TPULAUNCH_MATRIX as given. init writes a new matrix here, so it
    // never looks further up.
    globals.matrix_given = globals.matrix_option->count() > 0;
    if (given.get_name() != "init") {
      cli::locate_matrix(globals);
    }
    for (const auto& command : commands) {
      if (command.app == &given) {
        auto result = command.run();
        if (!result) {
          return fail(result.error());
        }
        write_all(STDOUT_FILENO, result->out);
        write_all(STDERR_FILENO, result->err);
        // exit() rather than return, as ninja's main does: the work is done, and taking the
        // command-line parser and the result apart again would cost a plan 2% more for nothing.
        // (Static destructors and atexit handlers, LeakSanitizer's check among them, still run.)
        std::exit(tpulaunch::to_int(result->code));
      }
    }
    return fail(tpulaunch::failure("internal error: the parsed subcommand has no command"));
  } catch (const std::exception& e) {
    // Expected failures are values; reaching this is a bug, reported as a run-time failure.
    return fail(tpulaunch::failure(fmt::format("internal error: {}", e.what())));
  }
}
