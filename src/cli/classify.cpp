// tpulaunch classify: report the evidence in Python sources and suggest a class.
#include <algorithm>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "commands.hpp"
#include "tpulaunch/classify/classifier.hpp"
#include "tpulaunch/classify/source_encoding.hpp"
#include "tpulaunch/matrix/exercises.hpp"
#include "tpulaunch/matrix/lesson.hpp"
#include "tpulaunch/matrix/matrix.hpp"
#include "tpulaunch/util/sha256.hpp"
#include "tpulaunch/util/text_file.hpp"
#include "tpulaunch/values/validate.hpp"

namespace tpulaunch::cli {
namespace {

struct ClassifyArgs {
  std::vector<std::string> scripts;
  Format format = Format::text;
};

struct Classified {
  std::string path;
  std::string sha256;
  Classification result;         // with the evidence of the course files it imports
  std::vector<LessonFile> files; // those course files
  bool helper = false;           // the matrix's "helpers" name it: not a script
  // Its matrix entry's class and what the review declares its runs prove (nullopt: nothing).
  std::optional<std::string> reviewed_class;
  std::optional<Proves> proves;
};

// The file to classify for one argument: an existing path; else, when the matrix loads, an id
// (`advanced/sub_lesson`, with "did you mean") or a .py file name below the exercises folder.
Result<std::string> script_file(const std::string& argument, const Result<Matrix>& matrix) {
  std::error_code ec;
  if (std::filesystem::exists(argument, ec)) {
    return argument;
  }
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

// The lesson of the file at `path`: in a course, the script's (its imports followed below the
// exercises folder, with its entry's declared files); elsewhere, its imports followed below its
// own folder.
Result<Lesson> lesson_of(const std::string& path, const std::string& source, const Result<Matrix>& matrix,
                         Classified& classified) {
  if (matrix) {
    if (auto id = script_id_from_argument(*matrix, path)) {
      ScriptStatus status;
      status.id = *id;
      status.path = path;
      status.source = source;
      status.entry = matrix->find(*id);
      classified.helper = matrix->is_helper(*id + ".py");
      if (status.entry != nullptr) {
        classified.reviewed_class = status.entry->class_name;
        classified.proves = status.entry->proves;
      }
      return read_lesson(*matrix, status);
    }
  }
  const std::filesystem::path file(path);
  LessonRequest request;
  request.root = file.parent_path().string();
  request.script = file.filename().string();
  request.source = source;
  request.what = fmt::format("script {}", path);
  return read_lesson(request);
}

Result<Classified> classify_file(const std::string& argument, const Result<Matrix>& matrix) {
  TPULAUNCH_TRY(const std::string path, script_file(argument, matrix));
  TPULAUNCH_TRY(const std::string source, read_text_file(path, "script", k_max_script_bytes));
  TPULAUNCH_CHECK(check_python_source(source, path, "script"));
  Classified classified{path, sha256_hex(source), {}, {}, false, {}, {}};
  TPULAUNCH_TRY(Lesson lesson, lesson_of(path, source, matrix, classified));
  classified.result = std::move(lesson.classification);
  classified.files = std::move(lesson.files);
  if (classified.helper) {
    classified.result.suggested.reset();
    classified.result.why = "a helper module (the matrix's \"helpers\"), not a script: its evidence counts for each "
                            "script that imports it";
  }
  log_classification(path, classified.result);
  return classified;
}

std::string suggestion_text(const Classification& c) {
  return c.suggested ? fmt::format("{} (a suggestion, not a review)", to_string(*c.suggested))
                     : std::string("none: a reviewer must decide");
}

// What the matrix entry says its runs prove, and so what plan's verify step checks by default.
std::string proves_text(std::optional<Proves> proves) {
  return proves ? fmt::format("proves {} (plan verifies --verify {})", to_string(*proves), to_string(*proves))
                : std::string("proves nothing declared (plan verifies logs and every worker's recorded status 0, "
                              "no training claim)");
}

// One file's member of the JSON form's "files".
nlohmann::ordered_json file_json(const Classified& f) {
  nlohmann::ordered_json j;
  j["path"] = f.path;
  j["sha256"] = f.sha256;
  j["helper"] = f.helper;
  nlohmann::ordered_json course_files = nlohmann::ordered_json::array();
  for (const auto& file : f.files) {
    course_files.push_back(
        {{"path", file.path}, {"staged", file.staged}, {"sha256", file.sha256}, {"declared", file.declared}});
  }
  j["course_files"] = std::move(course_files);
  j["reviewed_class"] = f.reviewed_class ? nlohmann::ordered_json(*f.reviewed_class) : nullptr;
  j["proves"] = f.proves ? nlohmann::ordered_json(to_string(*f.proves)) : nullptr;
  j["suggested_class"] = f.result.suggested ? nlohmann::ordered_json(to_string(*f.result.suggested)) : nullptr;
  j["why"] = f.result.why;
  j["contradictions"] = f.result.contradictions;
  j["missing_multi_host_markers"] = missing_multi_host_markers(f.result);
  nlohmann::ordered_json evidence = nlohmann::ordered_json::array();
  for (const auto& e : f.result.evidence) {
    evidence.push_back(
        {{"file", evidence_path(f.path, e)},
         {"rule", to_string(e.rule)},
         {"category", to_string(e.category)},
         {"line", e.line},
         {"column", e.column},
         {"text", e.text},
         {"implies", e.implies},
         {"detail", e.detail},
         {"uncalled_function", e.counts() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e.uncalled)}});
  }
  j["evidence"] = std::move(evidence);
  return j;
}

std::string plain_text(const std::vector<Classified>& files) {
  std::string out;
  for (const auto& f : files) {
    out += fmt::format("{}\n  sha256:    {}\n", f.path, f.sha256);
    for (const auto& file : f.files) {
      out += fmt::format("  with:      {} (sha256 {}){}\n", file.path,
                         file.sha256.empty() ? std::string("missing") : file.sha256, file.declared ? ", declared" : "");
    }
    if (f.reviewed_class) {
      // A cpu-only script runs on the CPU route, which has no verify step.
      out += *f.reviewed_class == to_string(ScriptClass::cpu_only)
                 ? fmt::format("  reviewed:  {}\n", *f.reviewed_class)
                 : fmt::format("  reviewed:  {}; {}\n", *f.reviewed_class, proves_text(f.proves));
    }
    out += fmt::format("  suggested: {}\n  why:       {}\n", suggestion_text(f.result), f.result.why);
    for (const auto& c : f.result.contradictions) {
      out += fmt::format("  CONTRADICTION: {}\n", c);
    }
    if (f.result.evidence.empty()) {
      out += "  evidence:  none\n";
    }
    for (const auto& e : f.result.evidence) {
      out += fmt::format("  {}:{}:{}: {} [{}] {}\n      -> {}\n", evidence_path(f.path, e), e.line, e.column,
                         to_string(e.category), to_string(e.rule), e.text, e.implies);
      if (!e.detail.empty()) {
        out += fmt::format("      {}: {}\n", is_undecided(e) && e.counts() ? "cannot tell" : "note", e.detail);
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
  // Read once: it says which arguments are scripts of the course, and which are helpers.
  const Result<Matrix> matrix = load_matrix(globals);
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
    for (const Error& error : below->unreadable) {
      output.err += message_line(error);
      failed = failed.value_or(error.code);
    }
    arguments.insert(arguments.end(), below->files.begin(), below->files.end());
  }
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& argument : arguments) {
    auto classified = classify_file(argument, matrix);
    if (!classified) {
      output.err += message_line(classified.error());
      failed = failed.value_or(classified.error().code);
      continue;
    }
    if (args.format == Format::json) {
      // A file whose name JSON cannot carry (not UTF-8) is reported as one that cannot be read is:
      // its own error line, and the other files' report.
      nlohmann::ordered_json j = file_json(*classified);
      if (auto carried = check_json_strings(j); !carried) {
        output.err += message_line(
            Error{carried.error().code, fmt::format("{}: {}", printable(classified->path), carried.error().message)});
        failed = failed.value_or(carried.error().code);
        continue;
      }
      list.push_back(std::move(j));
      continue;
    }
    files.push_back(std::move(classified).value());
  }
  output.code = failed.value_or(ExitCode::success);
  if (args.format == Format::json) {
    TPULAUNCH_TRY(output.out, json_text(nlohmann::ordered_json{{"files", std::move(list)}}));
  } else {
    output.out = plain_text(files);
  }
  return output;
}

std::string rules_help() {
  std::string out = "Rules (category, id: what it matches):\n";
  std::size_t width = 0;
  for (const auto& rule : classifier_rules()) {
    width = std::max(width, rule.id.size());
  }
  for (const auto& rule : classifier_rules()) {
    out += fmt::format("  {:<18} {:<{}} {}\n", to_string(rule.category), rule.id, width, rule.pattern);
  }
  return out;
}

} // namespace

Command setup_classify(CLI::App& parent, const Globals& globals) {
  auto args = std::make_shared<ClassifyArgs>();
  CLI::App* app =
      parent.add_subcommand("classify", "Read Python sources as tokens and report device/multi-host evidence");
  // Its options are registered when the command line names it (CLI11 calls this before parsing
  // the subcommand's words): a run pays for one subcommand's options, not all ten.
  app->preparse_callback([app, args](std::size_t /*remaining*/) {
    app->add_option("scripts", args->scripts,
                    "script files, ids in the matrix's exercises folder, or folders (every .py file below them)")
        ->required();
    add_format_option(*app, args->format, {Format::text, Format::json});
    app->footer("Examples:\n  tpulaunch classify public/exercises\n  tpulaunch classify public/exercises/*.py\n"
                "  tpulaunch classify distributed-02 --format json\n\n" +
                rules_help());
  });
  return Command{app, [args, &globals]() { return run_classify(*args, globals); }};
}

} // namespace tpulaunch::cli
