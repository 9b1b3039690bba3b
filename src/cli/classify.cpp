// tpulaunch classify: report the evidence in Python sources and suggest a class.
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "commands.hpp"
#include "tpulaunch/classifier.hpp"
#include "tpulaunch/exercises.hpp"
#include "tpulaunch/sha256.hpp"
#include "tpulaunch/text_file.hpp"
#include "tpulaunch/utf8.hpp"
#include "tpulaunch/validate.hpp"

namespace tpulaunch::cli {
namespace {

struct ClassifyArgs {
  std::vector<std::string> scripts;
  std::string format;
};

struct Classified {
  std::string path;
  std::string sha256;
  Classification result;
};

// The file to classify for one argument: an existing path; else, when the matrix loads, an id
// (`advanced/sub_lesson`, with "did you mean") or a .py file name below the exercises folder.
Result<std::string> script_file(const std::string& argument, const Globals& globals) {
  std::error_code ec;
  if (std::filesystem::exists(argument, ec)) {
    return argument;
  }
  auto matrix = load_matrix(globals);
  if (argument.ends_with(".py")) {
    if (matrix) {
      if (auto id = script_id_from_argument(*matrix, argument)) {
        return matrix->script_path(*id);
      }
    }
    return argument; // reading it names the missing file
  }
  TPULAUNCH_CHECK(validate_value(ValueKind::script_id, argument));
  if (!matrix) {
    return matrix.error();
  }
  TPULAUNCH_TRY(const std::string id, script_id_from_argument(*matrix, argument));
  return matrix->script_path(id);
}

Result<Classified> classify_file(const std::string& argument, const Globals& globals) {
  TPULAUNCH_TRY(const std::string path, script_file(argument, globals));
  TPULAUNCH_TRY(const std::string source, read_text_file(path, "script", k_max_script_bytes));
  TPULAUNCH_CHECK(check_utf8_text(source, path, "script"));
  Classified classified{path, sha256_hex(source), classify_source(source)};
  log_classification(path, classified.result);
  return classified;
}

std::string suggestion_text(const Classification& c) {
  return c.suggested ? fmt::format("{} (a suggestion, not a review)", to_string(*c.suggested))
                     : std::string("none: a reviewer must decide");
}

std::string json_text(const std::vector<Classified>& files) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& f : files) {
    nlohmann::ordered_json j;
    j["path"] = f.path;
    j["sha256"] = f.sha256;
    j["suggested_class"] = f.result.suggested ? nlohmann::ordered_json(to_string(*f.result.suggested)) : nullptr;
    j["why"] = f.result.why;
    j["contradictions"] = f.result.contradictions;
    j["missing_multi_host_markers"] = missing_multi_host_markers(f.result);
    nlohmann::ordered_json evidence = nlohmann::ordered_json::array();
    for (const auto& e : f.result.evidence) {
      evidence.push_back({{"rule", e.rule}, {"category", to_string(e.category)}, {"line", e.line},
                          {"column", e.column}, {"text", e.text}, {"implies", e.implies}, {"detail", e.detail}});
    }
    j["evidence"] = std::move(evidence);
    list.push_back(std::move(j));
  }
  return dump_json(nlohmann::ordered_json{{"files", list}}) + "\n";
}

std::string plain_text(const std::vector<Classified>& files) {
  std::string out;
  for (const auto& f : files) {
    out += fmt::format("{}\n  sha256:    {}\n  suggested: {}\n  why:       {}\n", f.path, f.sha256,
                       suggestion_text(f.result), f.result.why);
    for (const auto& c : f.result.contradictions) {
      out += fmt::format("  CONTRADICTION: {}\n", c);
    }
    if (f.result.evidence.empty()) {
      out += "  evidence:  none\n";
    }
    for (const auto& e : f.result.evidence) {
      out += fmt::format("  {}:{}:{}: {} [{}] {}\n      -> {}\n", f.path, e.line, e.column, to_string(e.category),
                         e.rule, e.text, e.implies);
      if (!e.detail.empty()) {
        out += fmt::format("      cannot tell: {}\n", e.detail);
      }
    }
  }
  return out;
}

// Every readable file is reported; each one that cannot be read gets its own error line on
// stderr, and the exit code is the first failure's (4 for a file that cannot be read).
Result<Output> run_classify(const ClassifyArgs& args, const Globals& globals) {
  std::vector<Classified> files;
  Output output;
  std::optional<ExitCode> failed;
  // A folder stands for every .py file in it and below it, so one line classifies a course. (A
  // name ending in .py is meant as a script, whatever it is: a folder of that name is an error.)
  std::vector<std::string> arguments;
  for (const auto& argument : args.scripts) {
    std::error_code ec;
    if (argument.ends_with(".py") || !std::filesystem::is_directory(argument, ec)) {
      arguments.push_back(argument);
      continue;
    }
    auto below = python_files_below(argument);
    if (!below) {
      output.err += message_line(below.error());
      failed = failed.value_or(below.error().code);
      continue;
    }
    arguments.insert(arguments.end(), below->begin(), below->end());
  }
  for (const auto& argument : arguments) {
    auto classified = classify_file(argument, globals);
    if (!classified) {
      output.err += message_line(classified.error());
      failed = failed.value_or(classified.error().code);
      continue;
    }
    files.push_back(std::move(classified).value());
  }
  output.code = failed.value_or(ExitCode::success);
  output.out = args.format == "json" ? json_text(files) : plain_text(files);
  return output;
}

std::string rules_help() {
  std::string out = "Rules (category, id: what it matches):\n";
  for (const auto& rule : classifier_rules()) {
    out += fmt::format("  {:<18} {:<24} {}\n", to_string(rule.category), rule.id, rule.pattern);
  }
  return out;
}

} // namespace

Command setup_classify(CLI::App& parent, const Globals& globals) {
  auto args = std::make_shared<ClassifyArgs>();
  CLI::App* app = parent.add_subcommand("classify", "Read Python sources as tokens and report device/multi-host evidence");
  app->add_option("scripts", args->scripts,
                  "script files, ids in the matrix's exercises folder, or folders (every .py file below them)")
      ->required();
  add_format_option(*app, args->format, {"text", "json"});
  app->footer("Examples:\n  tpulaunch classify public/exercises\n  tpulaunch classify public/exercises/*.py\n"
              "  tpulaunch classify distributed-02 --format json\n\n" +
              rules_help());
  return Command{app, [args, &globals]() { return run_classify(*args, globals); }};
}

} // namespace tpulaunch::cli
