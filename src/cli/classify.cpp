// tpulaunch classify: report the evidence in Python sources and suggest a class.
#include <filesystem>

#include <fmt/format.h>

#include "commands.hpp"
#include "tpulaunch/classifier.hpp"
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

// A path to a file, or the id of a script in the matrix's exercises folder.
Result<std::string> script_file(const std::string& argument, const Globals& globals) {
  std::error_code ec;
  if (std::filesystem::exists(argument, ec) || argument.find('/') != std::string::npos || argument.ends_with(".py")) {
    return argument;
  }
  TPULAUNCH_CHECK(validate_value(ValueKind::script_id, argument));
  TPULAUNCH_TRY(const Matrix matrix, load_matrix(globals));
  return matrix.script_path(argument);
}

std::string suggestion_text(const Classification& c) {
  return c.suggested ? std::string(to_string(*c.suggested)) : std::string("none (a reviewer must decide)");
}

Result<Output> run_classify(const ClassifyArgs& args, const Globals& globals) {
  std::vector<Classified> files;
  for (const auto& argument : args.scripts) {
    TPULAUNCH_TRY(const std::string path, script_file(argument, globals));
    TPULAUNCH_TRY(const std::string source, read_text_file(path, "script", k_max_script_bytes));
    TPULAUNCH_CHECK(check_utf8_text(source, path, "script"));
    files.push_back(Classified{path, sha256_hex(source), classify_source(source)});
    log_classification(path, files.back().result);
  }
  Output output;
  if (args.format == "json") {
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
                            {"column", e.column}, {"text", e.text}, {"implies", e.implies}});
      }
      j["evidence"] = std::move(evidence);
      list.push_back(std::move(j));
    }
    output.out = nlohmann::ordered_json{{"files", list}}.dump(2) + "\n";
    return output;
  }
  for (const auto& f : files) {
    output.out += fmt::format("{}\n  sha256:    {}\n  suggested: {} (a suggestion, not a review)\n  why:       {}\n",
                              f.path, f.sha256, suggestion_text(f.result), f.result.why);
    for (const auto& c : f.result.contradictions) {
      output.out += fmt::format("  CONTRADICTION: {}\n", c);
    }
    if (f.result.evidence.empty()) {
      output.out += "  evidence:  none\n";
    }
    for (const auto& e : f.result.evidence) {
      output.out += fmt::format("  {}:{}:{}: {} [{}] {}\n      -> {}\n", f.path, e.line, e.column, to_string(e.category),
                                e.rule, e.text, e.implies);
    }
  }
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
  app->add_option("scripts", args->scripts, "script files, or ids in the matrix's exercises folder")->required();
  add_format_option(*app, args->format, {"text", "json"});
  app->footer("Examples:\n  tpulaunch classify public/exercises/*.py\n  tpulaunch classify distributed-02 --format json\n\n" +
              rules_help());
  return Command{app, [args, &globals]() { return run_classify(*args, globals); }};
}

} // namespace tpulaunch::cli
