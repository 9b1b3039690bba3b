#pragma once
// The CI gate's core: audit a matrix against its exercises folder and a list of routes that must
// be allowed. Findings are values; the CLI prints them as text, JSON or workflow annotations.
#include <string>
#include <string_view>
#include <vector>

#include "tpulaunch/catalog/catalog.hpp"
#include "tpulaunch/util/error.hpp"
#include "tpulaunch/matrix/matrix.hpp"

namespace tpulaunch {

enum class Severity { warning, error };

// What a finding is about; to_string gives the name the output shows ("stale-digest").
enum class FindingKind {
  unreviewed,
  stale_digest,
  unknown_class,
  missing_file,
  unreadable,
  contradiction,
  route_refused,
  invalid_name,
  linked_folder,
  missing_helper,
};
std::string_view to_string(FindingKind kind);

struct AuditFinding {
  Severity severity = Severity::error;
  FindingKind kind = FindingKind::unreviewed;
  std::string script;        // script id ("" for the matrix as a whole)
  std::string path;          // file the finding is about
  std::uint32_t line = 0;    // 0 when not about a line
  std::string message;
  // What an error finding makes check exit with: refused (3), or the Error's own code (config, 4)
  // for a script that cannot be read (not UTF-8, too large, not a regular file, leading outside
  // the exercises folder), as plan, classify and review exit on that same file.
  ExitCode code = ExitCode::refused;
  std::uint32_t column = 0;  // 0 when the message gives none
};

struct RouteAsk {
  std::string script;
  std::string slice; // "cpu" for the CPU route
};

struct AuditReport {
  std::size_t scripts = 0; // .py files in the exercises folder
  std::size_t entries = 0; // matrix entries
  std::vector<AuditFinding> findings;
  [[nodiscard]] std::size_t count(Severity severity) const;
  // success with no error finding; otherwise the first error finding's code that is not refused
  // (a script that cannot be read: config), else refused.
  [[nodiscard]] ExitCode exit_code() const;
};

// Parses "ID@SLICE" (usage Error otherwise).
Result<RouteAsk> parse_route_ask(std::string_view text);

// Audits every .py file of the exercises folder and every matrix entry. `strict` makes unreviewed
// scripts errors. A route naming an unknown slice is a usage Error; an unreadable exercises
// folder a config Error. Files are read, hashed and classified on up to `jobs` threads; the
// report is the same for every `jobs` (findings in file order), and 1 uses no thread at all.
Result<AuditReport> audit_course(const Matrix& matrix, const Catalog& catalog, const std::vector<RouteAsk>& routes,
                                 bool strict, unsigned jobs = 1);

// The folder GitHub resolves workflow-annotation paths against: the nearest folder at or above
// `from` that holds `.git` (a folder, or the file a worktree has), else `fallback`.
std::string repository_root(const std::string& from, const std::string& fallback);

// `path` (absolute, or relative to the current folder) relative to `root`, in '/' form.
std::string path_from_root(const std::string& path, const std::string& root);

} // namespace tpulaunch
