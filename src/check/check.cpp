#include "tpulaunch/check/check.hpp"

#include <algorithm>
#include <filesystem>
#include <iterator>

#include <fmt/format.h>

#include "tpulaunch/catalog/backend.hpp"
#include "tpulaunch/classify/classifier.hpp"
#include "tpulaunch/matrix/exercises.hpp"
#include "tpulaunch/matrix/lesson.hpp"
#include "tpulaunch/matrix/overrides.hpp"
#include "tpulaunch/util/parallel.hpp"
#include "tpulaunch/route/router.hpp"
#include "tpulaunch/values/validate.hpp"

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;

// One finding about script `s` (its id and path), appended to `findings`.
void add_finding(std::vector<AuditFinding>& findings, Severity severity, FindingKind kind, const ScriptStatus& s,
                 std::uint32_t line, std::string message) {
  findings.push_back(AuditFinding{severity, kind, s.id, s.path, line, std::move(message)});
}

// One finding about evidence `e` of script `s`: at its line of the script, or of the course file
// the script imports that it was found in.
void add_finding(std::vector<AuditFinding>& findings, Severity severity, FindingKind kind, const ScriptStatus& s,
                 const Evidence& e, std::string message) {
  add_finding(findings, severity, kind, s, e.line, std::move(message));
  findings.back().path = evidence_path(s.path, e);
}

// The findings about one script, worked out wholly on the thread that read it: the file is read,
// hashed and (when reviewed) classified, its review state and any contradiction with its entry
// found, and everything but the findings freed there. A result waiting in the pool's ring is
// then just a vector, nearly always empty, and the delivering thread never frees memory another
// thread allocated (glibc's free() of such memory contends for that thread's arena lock).
class FileAudit {
public:
  FileAudit(const Matrix& matrix, bool strict) : m_matrix(matrix), m_strict(strict), m_folders(matrix.exercises_path()) {}

  [[nodiscard]] std::vector<AuditFinding> audit(const std::string& id) const {
    std::vector<AuditFinding> findings;
    auto resolved = resolve_script(m_matrix, id, &m_folders);
    if (!resolved) {
      ScriptStatus s;
      s.id = id;
      s.path = m_matrix.script_path(id);
      // The Error names the file and, for a byte that is not UTF-8, its line and column: the
      // finding carries them, and the Error's exit code.
      const Error& error = resolved.error();
      const auto position = message_position(error.message);
      const bool here = position && position->file == s.path;
      add_finding(findings, Severity::error, FindingKind::unreadable, s, here ? position->line : 0, error.message);
      findings.back().code = error.code;
      findings.back().column = here ? position->column : 0;
      return findings;
    }
    const ScriptStatus& s = *resolved;
    switch (s.state) {
    case ReviewState::no_entry:
      add_finding(findings, m_strict ? Severity::error : Severity::warning, FindingKind::unreviewed, s, 0,
                  fmt::format("'{}' has no matrix entry: review-required, it gets no route", id));
      break;
    case ReviewState::unknown_class:
      add_finding(findings, Severity::error, FindingKind::unknown_class, s, 0, s.explanation());
      break;
    case ReviewState::stale_digest:
      add_finding(findings, Severity::error, FindingKind::stale_digest, s, 0, s.explanation());
      break;
    case ReviewState::missing_file:
      add_finding(findings, Severity::error, FindingKind::missing_file, s, 0, s.explanation());
      break;
    case ReviewState::reviewed: {
      // resolve_script read the lesson: the script with the course files it imports.
      const Classification& classification = *s.classification;
      log_classification(s.path, classification);
      check_contradictions(findings, s, classification);
      break;
    }
    }
    return findings;
  }

private:
  // Evidence that contradicts the reviewed class of a fresh entry.
  static void check_contradictions(std::vector<AuditFinding>& findings, const ScriptStatus& s,
                                   const Classification& c) {
    const MatrixEntry& entry = *s.entry;
    const ScriptClass cls = *entry.script_class;
    if (cls == ScriptClass::cpu_only) {
      return; // the CPU route is always safe: nothing here can send it to a TPU
    }
    for (const Evidence& e : unoverridden(c.of_category(Category::cpu_selection), &entry)) {
      add_finding(findings, Severity::error, FindingKind::contradiction, s, e,
                  fmt::format("'{}' is reviewed {} but selects CPU devices {}[{}]: {}", s.id, entry.class_name,
                              e.file.empty() ? "here " : "in a file it imports ", to_string(e.rule), e.text));
    }
    if (cls == ScriptClass::multi_host_qualified) {
      for (const MultiHostMarker* marker : unmet_markers(c, &entry)) {
        add_finding(findings, Severity::error, FindingKind::contradiction, s, 0,
                    fmt::format("'{}' is reviewed multi-host-qualified but has no {} evidence{}", s.id, marker->name,
                                marker->not_overridable.empty()
                                    ? ""
                                    : fmt::format(" (no override can cover it: {})", marker->not_overridable)));
      }
      if (const Evidence* call = unaccepted_condition(c, &entry)) {
        add_finding(findings, Severity::error, FindingKind::contradiction, s, *call,
                    fmt::format("'{}' is reviewed multi-host-qualified but calls jax.distributed.initialize() only "
                                "under a condition its review did not accept ({}); review it again with "
                                "--initialize-condition REASON",
                                s.id, call->detail));
      }
    }
  }

  const Matrix& m_matrix;
  bool m_strict;
  // Where the scripts' imports lead, each folder listed once for all of them: a course of 10,000
  // lessons importing jax, numpy and a dozen more would otherwise cost two failed stat calls per
  // import per script (300,000 on bench/make_synthetic_course.py's course).
  ListedFolders m_folders;
};

// The findings about the course's files that are no script: names that cannot be script ids,
// linked folders, and "helpers" paths that name nothing. `unlisted` is their severity.
void add_listing_findings(std::vector<AuditFinding>& findings, const Matrix& matrix, const ExerciseListing& listing,
                          Severity unlisted) {
  for (const auto& path : listing.invalid_names) {
    std::error_code ec;
    findings.push_back(AuditFinding{unlisted, FindingKind::invalid_name, "", path, 0,
                                    fs::is_directory(path, ec)
                                        ? "the folder name cannot be part of a script id, so no script in it "
                                          "can ever be reviewed"
                                        : "the file name is not a valid script id, so it can never be reviewed"});
  }
  for (const auto& path : listing.linked_folders) {
    findings.push_back(AuditFinding{unlisted, FindingKind::linked_folder, "", path, 0,
                                    "a symlink to a folder is not followed: scripts must live in the exercises "
                                    "folder itself"});
  }
  for (const auto& helper : matrix.helpers) {
    // A "helpers" path that names nothing: a renamed or deleted module, or a typo.
    const std::string path = matrix.base_dir.empty() ? helper : (fs::path(matrix.base_dir) / helper).string();
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(path, ec))) {
      findings.push_back(AuditFinding{unlisted, FindingKind::missing_helper, "", path, 0,
                                      "the matrix's \"helpers\" name this path, but nothing is there"});
    }
  }
}

// The line a message names in words, as the router and the classifier write them: "at line 12",
// "(line 12)", "at common/mesh.py line 5" (evidence_place: the file relative to the script's
// folder). Empty file: the finding's own.
struct NamedLine {
  std::string file;
  std::uint32_t line = 0;
};
std::optional<NamedLine> line_in_words(std::string_view message) {
  for (std::size_t at = message.find("line "); at != std::string_view::npos; at = message.find("line ", at + 1)) {
    std::size_t end = at + 5;
    std::uint32_t line = 0;
    while (end < message.size() && message[end] >= '0' && message[end] <= '9' && line < 100'000'000U) {
      line = line * 10 + static_cast<std::uint32_t>(message[end] - '0');
      ++end;
    }
    if (line == 0) {
      continue;
    }
    const std::string_view before = message.substr(0, at);
    if (before.ends_with("(") || before.ends_with(" at ")) {
      return NamedLine{"", line};
    }
    // "at FILE line N": FILE is one word ending in .py.
    const std::size_t word = before.size() >= 2 ? before.rfind(' ', before.size() - 2) : std::string_view::npos;
    const std::string_view file =
        word == std::string_view::npos ? std::string_view() : before.substr(word + 1, before.size() - word - 2);
    if (before.ends_with(".py ") && word != std::string_view::npos && before.substr(0, word + 1).ends_with(" at ")) {
      return NamedLine{std::string(file), line};
    }
  }
  return std::nullopt;
}

// Every finding whose message names a line gets that line (and column, and file): a message
// that starts "FILE:LINE[:COLUMN]: " (message_position), or one that names it in words. So each
// form, and every workflow annotation, points at the line the words name.
void fill_named_lines(std::vector<AuditFinding>& findings) {
  for (AuditFinding& f : findings) {
    if (f.line > 0) {
      continue;
    }
    if (const auto position = message_position(f.message); position && position->line > 0) {
      f.path = position->file;
      f.line = position->line;
      f.column = position->column;
    } else if (const auto named = line_in_words(f.message)) {
      if (!named->file.empty()) {
        f.path = (fs::path(f.path).parent_path() / named->file).lexically_normal().generic_string();
      }
      f.line = named->line;
    }
  }
}

} // namespace

std::string_view to_string(FindingKind kind) {
  switch (kind) {
  case FindingKind::unreviewed: return "unreviewed";
  case FindingKind::stale_digest: return "stale-digest";
  case FindingKind::unknown_class: return "unknown-class";
  case FindingKind::missing_file: return "missing-file";
  case FindingKind::unreadable: return "unreadable";
  case FindingKind::contradiction: return "contradiction";
  case FindingKind::route_refused: return "route-refused";
  case FindingKind::invalid_name: return "invalid-name";
  case FindingKind::linked_folder: return "linked-folder";
  case FindingKind::missing_helper: return "missing-helper";
  }
  return "unknown";
}

std::size_t AuditReport::count(Severity severity) const {
  return static_cast<std::size_t>(
      std::count_if(findings.begin(), findings.end(), [&](const AuditFinding& f) { return f.severity == severity; }));
}

ExitCode AuditReport::exit_code() const {
  bool errors = false;
  for (const auto& f : findings) {
    if (f.severity != Severity::error) {
      continue;
    }
    if (f.code != ExitCode::refused) {
      return f.code;
    }
    errors = true;
  }
  return errors ? ExitCode::refused : ExitCode::success;
}

Result<RouteAsk> parse_route_ask(std::string_view text) {
  const auto at = text.find('@');
  if (at == std::string_view::npos || at == 0 || at + 1 == text.size()) {
    return usage_error(fmt::format("--route '{}' must be ID@SLICE, e.g. collective-update@v5litepod-16 or distributed-02@cpu",
                                   printable(text)));
  }
  return RouteAsk{std::string(text.substr(0, at)), std::string(text.substr(at + 1))};
}

Result<AuditReport> audit_course(const Matrix& matrix, const Catalog& catalog, const std::vector<RouteAsk>& routes,
                                 bool strict, unsigned jobs) {
  // Routes are checked for well-formedness first: a typo in CI configuration is a usage error.
  std::vector<const Slice*> route_slices;
  for (const auto& ask : routes) {
    TPULAUNCH_CHECK(validate_value(ValueKind::script_id, ask.script));
    TPULAUNCH_CHECK(check_known_script(matrix, ask.script));
    if (ask.slice == "cpu") {
      route_slices.push_back(nullptr);
    } else {
      TPULAUNCH_TRY(const Slice* slice, require_slice_for(Backend::tpu_vm, catalog, ask.slice));
      route_slices.push_back(slice);
    }
  }

  // Every script in every subfolder; nothing there is skipped without a finding.
  TPULAUNCH_TRY(ExerciseListing listing, list_exercises(matrix));
  const std::vector<std::string>& ids = listing.ids;

  AuditReport report;
  report.scripts = ids.size() + listing.invalid_names.size();
  report.entries = matrix.scripts.size();
  const FileAudit file_audit(matrix, strict);
  add_listing_findings(report.findings, matrix, listing, strict ? Severity::error : Severity::warning);
  map_ordered<std::vector<AuditFinding>>(
      ids.size(), jobs, [&](std::size_t i) { return file_audit.audit(ids[i]); },
      [&](std::size_t, std::vector<AuditFinding>&& findings) {
        std::move(findings.begin(), findings.end(), std::back_inserter(report.findings));
      });
  // Entries with no file: both lists are sorted, so one merge-like pass finds them.
  auto listed = ids.begin();
  for (const auto& [id, entry] : matrix.scripts) {
    while (listed != ids.end() && *listed < id) {
      ++listed;
    }
    if (listed == ids.end() || *listed != id) {
      ScriptStatus s;
      s.id = id;
      s.path = matrix.script_path(id);
      s.entry = &entry;
      s.state = ReviewState::missing_file;
      add_finding(report.findings, Severity::error, FindingKind::missing_file, s, 0, s.explanation());
    }
  }
  for (std::size_t i = 0; i < routes.size(); ++i) {
    TPULAUNCH_TRY(const Routing routing, route_script(matrix, routes[i].script, route_slices[i]));
    const Decision& decision = routing.decision;
    if (!decision.allowed()) {
      std::string message = fmt::format("route {}@{} refused by {}: {}", routes[i].script, routes[i].slice,
                                        decision.refusal->rule, decision.refusal->reason);
      if (decision.refusal->evidence.empty()) {
        add_finding(report.findings, Severity::error, FindingKind::route_refused, routing.status, 0, std::move(message));
      } else {
        add_finding(report.findings, Severity::error, FindingKind::route_refused, routing.status,
                    decision.refusal->evidence.front(), std::move(message));
      }
    }
  }
  fill_named_lines(report.findings);
  return report;
}

std::string repository_root(const std::string& from, const std::string& fallback) {
  std::error_code ec;
  for (fs::path folder = fs::absolute(from.empty() ? "." : from, ec).lexically_normal(); !folder.empty();
       folder = folder.parent_path()) {
    if (fs::exists(folder / ".git", ec)) {
      return folder.string();
    }
    if (folder == folder.parent_path()) {
      break;
    }
  }
  return fallback;
}

std::string path_from_root(const std::string& path, const std::string& root) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec).lexically_normal();
  const fs::path relative = absolute.lexically_relative(fs::path(root).lexically_normal());
  return relative.empty() ? absolute.generic_string() : relative.generic_string();
}

} // namespace tpulaunch
