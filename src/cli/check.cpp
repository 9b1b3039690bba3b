// tpulaunch check: the CI gate. Audits the matrix against the exercises folder and asked routes.
#include <filesystem>

#include <fmt/format.h>

#include "commands.hpp"
#include "tpulaunch/check/check.hpp"
#include "tpulaunch/util/parallel.hpp"

namespace tpulaunch::cli {
namespace {

struct CheckArgs {
  bool strict = false;
  std::vector<std::string> routes;
  Format format = Format::text;
  unsigned jobs = available_cores();
};

std::string_view severity_name(Severity s) { return s == Severity::error ? "error" : "warning"; }

// Workflow-command escaping (GitHub Actions): %, CR and LF in messages; also , and : in properties.
std::string annotation_escape(std::string_view text, bool property) {
  std::string out;
  for (const char c : text) {
    switch (c) {
    case '%': out += "%25"; break;
    case '\r': out += "%0D"; break;
    case '\n': out += "%0A"; break;
    case ':': out += property ? "%3A" : ":"; break;
    case ',': out += property ? "%2C" : ","; break;
    default: out += c;
    }
  }
  return out;
}

Result<Output> check_report(const CheckArgs& args, const Globals& globals) {
  TPULAUNCH_TRY(const Catalog catalog, load_catalog(globals));
  TPULAUNCH_TRY(const Matrix matrix, load_matrix(globals));
  std::vector<RouteAsk> routes;
  for (const auto& text : args.routes) {
    TPULAUNCH_TRY(RouteAsk ask, parse_route_ask(text));
    routes.push_back(std::move(ask));
  }
  TPULAUNCH_TRY(const AuditReport report, audit_course(matrix, catalog, routes, args.strict, args.jobs));
  const std::size_t errors = report.count(Severity::error);
  const std::size_t warnings = report.count(Severity::warning);

  Output output;
  output.code = report.exit_code();
  std::string& out = output.out;
  if (args.format == Format::json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& f : report.findings) {
      list.push_back({{"severity", severity_name(f.severity)},
                      {"kind", to_string(f.kind)},
                      {"script", f.script},
                      {"path", f.path},
                      {"line", f.line == 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(f.line)},
                      {"column", f.column == 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(f.column)},
                      {"message", f.message}});
    }
    TPULAUNCH_TRY(out, json_text(nlohmann::ordered_json{{"ok", errors == 0},
                                                        {"matrix", matrix.origin},
                                                        {"scripts", report.scripts},
                                                        {"entries", report.entries},
                                                        {"errors", errors},
                                                        {"warnings", warnings},
                                                        {"findings", list}}));
    return output;
  }
  // GitHub attaches an annotation to a file by its path from the repository root, whatever -C
  // and --matrix say.
  const std::string root = args.format == Format::github
                               ? repository_root(matrix.base_dir.empty() ? "." : matrix.base_dir, globals.start_directory)
                               : std::string();
  for (const auto& f : report.findings) {
    if (args.format == Format::github) {
      out += fmt::format("::{} file={}{}{},title={}::{}\n", severity_name(f.severity),
                         annotation_escape(path_from_root(f.path, root), true),
                         f.line > 0 ? fmt::format(",line={}", f.line) : "",
                         f.line > 0 && f.column > 0 ? fmt::format(",col={}", f.column) : "",
                         annotation_escape(fmt::format("tpulaunch {}", to_string(f.kind)), true), annotation_escape(f.message, false));
    } else {
      out += fmt::format("{}{}: {}: [{}] {}\n", f.path, f.line > 0 ? fmt::format(":{}", f.line) : "",
                         severity_name(f.severity), to_string(f.kind), f.message);
    }
  }
  out += fmt::format("{}check: {}, {}: {}, {}{}\n", args.format == Format::github ? "::notice::" : "",
                     counted(report.scripts, "script"), counted(report.entries, "entry", "entries"), counted(errors, "error"),
                     counted(warnings, "warning"),
                     errors == 0 ? "" : fmt::format(" (exit {})", to_int(output.code)));
  return output;
}

// An Error of check itself (a malformed matrix or catalog, a bad --route) in the github format:
// the same one line on stderr, written as an ::error workflow command, which the Actions runner
// reads from stderr as from stdout, so the failure is annotated on the file and line it names.
Output error_annotation(const Error& error, const Globals& globals) {
  std::string properties;
  if (const auto position = message_position(error.message)) {
    const std::string folder = std::filesystem::path(position->file).parent_path().string();
    const std::string root = repository_root(folder.empty() ? "." : folder, globals.start_directory);
    properties = fmt::format("file={},line={}{},", annotation_escape(path_from_root(position->file, root), true),
                             position->line, position->column > 0 ? fmt::format(",col={}", position->column) : "");
  }
  std::string_view name = "error";
  for (const auto& info : k_exit_codes) {
    name = info.code == error.code ? info.name : name;
  }
  Output output;
  output.code = error.code;
  output.err = fmt::format("::error {}title={}::{}\n", properties, annotation_escape(fmt::format("tpulaunch {}", name), true),
                           annotation_escape(error.message, false));
  return output;
}

Result<Output> run_check(const CheckArgs& args, const Globals& globals) {
  auto result = check_report(args, globals);
  if (!result && args.format == Format::github) {
    return error_annotation(result.error(), globals);
  }
  return result;
}

} // namespace

Command setup_check(CLI::App& parent, const Globals& globals) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* app = parent.add_subcommand("check", "CI gate: audit the matrix against the exercises folder and routes");
  // Its options are registered when the command line names it (CLI11 calls this before parsing
  // the subcommand's words): a run pays for one subcommand's options, not all ten.
  app->preparse_callback([app, args](std::size_t /*remaining*/) {
    app->add_flag("--strict", args->strict, "scripts with no entry are errors, not warnings");
    app->add_option("--route", args->routes, "a route that must be allowed, ID@SLICE (SLICE may be 'cpu'); repeatable");
    add_format_option(*app, args->format, {Format::text, Format::json, Format::github});
    app->add_option("--jobs", args->jobs, "threads that read, hash and classify scripts (default: the cores)")
        ->check(CLI::Range(1U, 256U))->default_str("the cores");
    app->footer("Examples:\n  tpulaunch check --strict\n"
                "  tpulaunch check --route collective-update@v5litepod-16 --route distributed-02@cpu --format github\n"
                "Exit 0 when clean (warnings allowed), 3 when anything unsafe or stale is found, 4 on config errors\n"
                "(a malformed matrix or catalog, a script that cannot be read). With --format github an error of\n"
                "check itself is an ::error annotation too, on stderr.\n");
  });
  return Command{app, [args, &globals]() { return run_check(*args, globals); }};
}

} // namespace tpulaunch::cli
