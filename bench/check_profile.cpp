// check_profile: where the time and memory of `tpulaunch check` go, phase by phase, in one
// process, over a course folder (e.g. one made by bench/make_synthetic_course.py). Measures only.
//
//   check_profile COURSE_DIR [REPEATS]     (REPEATS: default 5; each figure is the median)
//
// Phases: the matrix parse; listing the exercises folder; resolve_script for every file (its
// filesystem checks, the read, the source check and SHA-256); then each of read, source check,
// SHA-256 and classify_source alone over sources already in memory; and audit_course as a
// whole (what `check` does between loading the matrix and printing), on one thread and on every
// core.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tpulaunch/catalog/catalog.hpp"
#include "tpulaunch/check/check.hpp"
#include "tpulaunch/classify/classifier.hpp"
#include "tpulaunch/matrix/exercises.hpp"
#include "tpulaunch/matrix/lesson.hpp"
#include "tpulaunch/matrix/matrix.hpp"
#include "tpulaunch/util/parallel.hpp"
#include "tpulaunch/util/sha256.hpp"
#include "tpulaunch/classify/source_encoding.hpp"
#include "tpulaunch/util/text_file.hpp"

namespace {

namespace fs = std::filesystem;

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

std::string fmt_jobs(unsigned cores) {
  return "--jobs " + std::to_string(cores) + " (the default here)";
}

template <typename F> double median_seconds(int repeats, F&& f) {
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void row(const char* phase, double seconds, double megabytes, const char* note) {
  if (megabytes > 0) {
    std::printf("| %-34s | %9.1f | %8.0f | %s |\n", phase, seconds * 1e3, megabytes / seconds, note);
  } else {
    std::printf("| %-34s | %9.1f | %8s | %s |\n", phase, seconds * 1e3, "", note);
  }
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: check_profile COURSE_DIR [REPEATS]\n");
    return 2;
  }
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  if (::chdir(argv[1]) != 0) {
    std::fprintf(stderr, "check_profile: cannot change to %s\n", argv[1]);
    return 2;
  }
  const double rss_start = peak_rss_mb();

  // The matrix first, in a fresh process, so the peak RSS right after it is its own.
  auto first = tpulaunch::load_matrix_file("execution-matrix.json");
  if (!first) {
    std::fprintf(stderr, "check_profile: %s\n", first.error().message.c_str());
    return 4;
  }
  const double rss_matrix = peak_rss_mb();
  const auto matrix_bytes = static_cast<double>(fs::file_size("execution-matrix.json")) / 1e6;
  const double t_matrix = median_seconds(repeats, [] { (void)tpulaunch::load_matrix_file("execution-matrix.json"); });
  const tpulaunch::Matrix matrix = std::move(first).value();

  std::vector<std::string> ids;
  const double t_list = median_seconds(repeats, [&] {
    auto listing = tpulaunch::list_exercises(matrix);
    ids = listing ? std::move(listing->ids) : std::vector<std::string>{};
  });

  std::vector<std::string> sources(ids.size());
  double corpus = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    auto text = tpulaunch::read_text_file(matrix.script_path(ids[i]), "script");
    if (text) {
      sources[i] = std::move(text).value();
      corpus += static_cast<double>(sources[i].size());
    }
  }
  corpus /= 1e6;

  std::size_t reviewed = 0;
  const double t_resolve = median_seconds(repeats, [&] {
    reviewed = 0;
    // As check does: the lessons' imports answered from one listing of each folder, not by stat.
    const tpulaunch::ListedFolders folders(matrix.exercises_path());
    for (const auto& id : ids) {
      auto status = tpulaunch::resolve_script(matrix, id, &folders);
      reviewed += status && status->reviewed() ? 1U : 0U;
    }
  });
  const double t_read = median_seconds(repeats, [&] {
    for (const auto& id : ids) {
      (void)tpulaunch::read_text_file(matrix.script_path(id), "script");
    }
  });
  const double t_utf8 = median_seconds(repeats, [&] {
    for (const auto& s : sources) {
      (void)tpulaunch::check_python_source(s, "x", "script");
    }
  });
  std::size_t hashed = 0;
  const double t_sha = median_seconds(repeats, [&] {
    for (const auto& s : sources) {
      hashed += tpulaunch::sha256_hex(s).size();
    }
  });
  std::size_t evidence = 0;
  const double t_classify = median_seconds(repeats, [&] {
    evidence = 0;
    for (const auto& s : sources) {
      evidence += tpulaunch::classify_source(s).evidence.size();
    }
  });
  auto catalog = tpulaunch::load_embedded_catalog();
  std::size_t findings = 0;
  const double t_audit = median_seconds(repeats, [&] {
    auto report = tpulaunch::audit_course(matrix, *catalog, {}, false, 1);
    findings = report ? report->findings.size() : 0;
  });
  const unsigned cores = tpulaunch::available_cores();
  const double t_audit_cores =
      median_seconds(repeats, [&] { (void)tpulaunch::audit_course(matrix, *catalog, {}, false, cores); });
  const double fs_checks = t_resolve - t_read - t_utf8 - t_sha;

  std::printf("check_profile: %s: %zu scripts (%zu reviewed), %.1f MB of Python, matrix %.2f MB with %zu entries; "
              "median of %d\n\n",
              argv[1], ids.size(), reviewed, corpus, matrix_bytes, matrix.scripts.size(), repeats);
  std::printf("| %-34s | %9s | %8s | %s |\n", "phase", "ms", "MB/s", "note");
  std::printf("|%s|%s|%s|%s|\n", "------------------------------------", "----------:", "---------:", "---");
  row("load_matrix_file (parse_matrix)", t_matrix, matrix_bytes, "the JSON tree, then the Matrix");
  row("list + sort the exercises folder", t_list, 0, "");
  row("resolve_script, every file", t_resolve, corpus, "fs checks + read + UTF-8 + SHA-256 + lesson");
  row("  read_text_file alone", t_read, corpus, "open, fstat, read");
  row("  check_python_source alone", t_utf8, corpus, "NUL, PEP 263 line, UTF-8");
  row("  sha256_hex alone", t_sha, corpus, "");
  row("  = filesystem checks (the rest)", fs_checks, 0, "resolve_script minus the three rows above");
  row("classify_source, every file", t_classify, corpus, "audit classifies reviewed files only");
  row("audit_course (check minus CLI/output)", t_audit, corpus, "--jobs 1");
  row("audit_course on every core", t_audit_cores, corpus, fmt_jobs(cores).c_str());
  std::printf("\n%zu evidence rows, %zu findings. Peak RSS: %.1f MB at start, %.1f MB after loading the matrix, "
              "%.1f MB at the end.\n",
              evidence, findings, rss_start, rss_matrix, peak_rss_mb());
  return hashed == 0 ? 1 : 0;
}
