// Property tests of quoting at both shell levels (docs/security.md, "How quoting works"), against a
// real bash.
//
// Adversarial values (quotes, $(), backticks, operators, control bytes, NUL, non-ASCII and invalid
// UTF-8, leading dashes, ~, globs, braces, very long values) go into every place a user value can
// reach a command: the TPU name, zone, project, run id and script id (validate.hpp), and the
// matrix's exercises_dir (which reaches commands through the script path). For each value either
// validation refuses it, or every command of the plan built with it, parsed by bash, gives exactly
// the argv the plan intends (level a: local shell -> gcloud's argv), and every --command= string,
// run by bash with recorders for the programs it calls, gives exactly the intended remote words,
// with ~/ and "$(hostname)" expanded on the remote side only (level b).
//
// Values are batched: the rendered lines go to bash as NUL-separated data (never pasted into a
// script by this test), and each is evaluated with `eval`, which parses exactly as `bash -c` does.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "support/test_catalog.hpp"

#include "tpulaunch/catalog/catalog.hpp"
#include "tpulaunch/matrix/exercises.hpp"
#include "tpulaunch/matrix/matrix.hpp"
#include "tpulaunch/gcloud/gcloud.hpp"
#include "tpulaunch/plan/plan.hpp"
#include "tpulaunch/remote/remote_program.hpp"
#include "tpulaunch/shell/shell.hpp"
#include "tpulaunch/values/validate.hpp"

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;

constexpr int k_values_per_kind = 10000;
constexpr std::size_t k_max_long_value = 64U * 1024U;
constexpr std::string_view k_fake_host = "t1v-n-fake-w-3";
constexpr std::size_t k_max_reported = 8; // failing examples printed per property

// --- the generator ------------------------------------------------------------------------------

// Pieces that mean something to a shell, to gcloud, to a terminal or to a UTF-8 decoder.
const std::vector<std::string>& atoms() {
  static const std::vector<std::string> k_atoms = {
      "'", "\"", "$(touch pwned)", "`touch pwned`", "$(id)", "${HOME}", "$HOME", "$1", "$$", "$?", ";", "|", "&", "&&",
      "||", "\n", "\r", "\t", "\r\n", std::string(1, '\0'), " ", "  ", "\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac",
      "\xf0\x9f\x98\x80", "\xff", "\xc3", "\xe2\x82", "\x80", "\xc0\xaf", "\xed\xa0\x80", "-", "--", "-rf", "--zone=x",
      "~", "~/", "~root", "*", "?", "[", "]", "[ab]", "{a,b}", "{1..3}", "!", "!!", "#", "=", "a=", "\\", "\\'", "%s",
      "%", "<", ">", ">>", "(", ")", "^", ",", ":", "@", ".", "..", "/", "../", "x", "A", "0", "'\\''",
      "\"$(hostname)\"", "\x1b[31m", "\x7f", "\x01", "\v", "\f", "jax[tpu]", "a:b", "pod:", "-x/y",
  };
  return k_atoms;
}

class AdversarialStrings {
public:
  explicit AdversarialStrings(std::uint32_t seed) : m_rng(seed) {}

  // Any bytes: atoms, random bytes, and now and then a very long value.
  std::string any() {
    const int shape = uniform(0, 199);
    if (shape == 0) {
      return long_value();
    }
    if (shape < 6) {
      return "";
    }
    std::string out;
    const int parts = uniform(1, 8);
    for (int i = 0; i < parts; ++i) {
      const int pick = uniform(0, 9);
      if (pick < 6) {
        out += atoms()[index(atoms().size())];
      } else if (pick < 8) {
        out += random_bytes(static_cast<std::size_t>(uniform(1, 6)));
      } else {
        out += safe_word(static_cast<std::size_t>(uniform(1, 12)));
      }
    }
    return out;
  }

  // A value for `kind`: half are valid by construction, and a third of those get one mutation.
  std::string value(ValueKind kind) {
    if (uniform(0, 1) == 0) {
      return any();
    }
    std::string v = valid(kind);
    if (uniform(0, 2) == 0) {
      mutate(v);
    }
    return v;
  }

  // A matrix exercises_dir: any bytes, or a relative path of ordinary folders with odd names.
  std::string directory() {
    if (uniform(0, 2) == 0) {
      return any();
    }
    std::string out;
    const int depth = uniform(1, 3);
    for (int i = 0; i < depth; ++i) {
      out += (i == 0 ? "" : "/");
      out += uniform(0, 1) == 0 ? safe_word(static_cast<std::size_t>(uniform(1, 10))) : any();
    }
    return out;
  }

  int uniform(int low, int high) { return std::uniform_int_distribution<int>(low, high)(m_rng); }
  std::size_t index(std::size_t size) { return std::uniform_int_distribution<std::size_t>(0, size - 1)(m_rng); }

private:
  std::string random_bytes(std::size_t n) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) {
      out += static_cast<char>(uniform(0, 255));
    }
    return out;
  }

  std::string from(std::string_view alphabet, std::size_t n) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) {
      out += alphabet[index(alphabet.size())];
    }
    return out;
  }

  std::string safe_word(std::size_t n) { return from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.", n); }

  std::string long_value() {
    const auto target = static_cast<std::size_t>(uniform(1024, static_cast<int>(k_max_long_value)));
    std::string out;
    while (out.size() < target) {
      out += uniform(0, 3) == 0 ? atoms()[index(atoms().size())] : safe_word(32);
    }
    out.resize(target);
    return out;
  }

  std::string valid(ValueKind kind) {
    constexpr std::string_view lower = "abcdefghijklmnopqrstuvwxyz";
    constexpr std::string_view lower_digits = "abcdefghijklmnopqrstuvwxyz0123456789";
    constexpr std::string_view name = "abcdefghijklmnopqrstuvwxyz0123456789-";
    constexpr std::string_view id = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.";
    switch (kind) {
    case ValueKind::tpu_name:
    case ValueKind::queued_resource: {
      const auto n = static_cast<std::size_t>(uniform(0, 63));
      return from(lower, 1) + from(name, n) + (n > 0 ? from(lower_digits, 1) : "");
    }
    case ValueKind::zone:
      return from(lower, static_cast<std::size_t>(uniform(1, 12))) + "-" + from(lower, static_cast<std::size_t>(uniform(1, 10))) +
             from("0123456789", static_cast<std::size_t>(uniform(1, 2))) + "-" + from(lower, 1);
    case ValueKind::project: {
      std::string domain = uniform(0, 4) == 0 ? from(lower, 1) + from("abcdefghijklmnopqrstuvwxyz0123456789-.", 6) + "x:" : "";
      return domain + from(lower, 1) + from(name, static_cast<std::size_t>(uniform(4, 28))) + from(lower_digits, 1);
    }
    case ValueKind::script_id:
    case ValueKind::run_id: {
      const std::size_t max = kind == ValueKind::script_id ? 101 : 65; // one past the limit, now and then
      return from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", 1) +
             from(id, static_cast<std::size_t>(uniform(0, static_cast<int>(max))));
    }
    case ValueKind::env_name:
      return from("ABCDEFGHIJKLMNOPQRSTUVWXYZ_abc", 1) + from("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", static_cast<std::size_t>(uniform(0, 20)));
    case ValueKind::interpreter:
      return uniform(0, 1) == 0 ? "~/" + safe_word(static_cast<std::size_t>(uniform(1, 20))) : any();
    case ValueKind::results_url: {
      // Any printable ASCII but the refused few in the prefix: quotes, $, `, spaces, backslashes.
      std::string prefix;
      const int parts = uniform(0, 3);
      for (int p = 0; p < parts; ++p) {
        prefix += (p == 0 ? "" : "/") + from(lower, 1) + from(" !\"$%&'()+,-.:;<=>@\\^_`{|}~aZ09", static_cast<std::size_t>(uniform(0, 12)));
      }
      return "gs://" + from(lower, 1) + from(lower_digits, static_cast<std::size_t>(uniform(2, 20))) + from(lower_digits, 1) +
             (prefix.empty() ? "" : "/" + prefix);
    }
    case ValueKind::runtime_version:
      return from(lower, 1) + from("abcdefghijklmnopqrstuvwxyz0123456789._-", static_cast<std::size_t>(uniform(0, 62))) +
             from(lower_digits, 1);
    case ValueKind::timeout:
    case ValueKind::grace:
    case ValueKind::valid_until:
    case ValueKind::ready_timeout:
    case ValueKind::poll:
      return std::to_string(uniform(1, 23)) + "h" + std::to_string(uniform(0, 59)) + "m";
    case ValueKind::jax_platforms: return uniform(0, 1) == 0 ? "tpu" : "tpu,cpu";
    }
    return "x";
  }

  void mutate(std::string& v) {
    const std::string atom = atoms()[index(atoms().size())];
    const std::size_t at = v.empty() ? 0 : index(v.size() + 1);
    if (uniform(0, 1) == 0 && !v.empty() && at < v.size()) {
      v.replace(at, 1, atom);
    } else {
      v.insert(at, atom);
    }
  }

  std::mt19937 m_rng;
};

// --- running bash ----------------------------------------------------------------------------

std::vector<std::string> split_nul(std::string_view data) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < data.size()) {
    const auto end = data.find('\0', start);
    if (end == std::string_view::npos) {
      out.emplace_back(data.substr(start));
      break;
    }
    out.emplace_back(data.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string join_nul(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    out += item;
    out += '\0';
  }
  return out;
}

// A private folder with glob bait (so an unquoted * ? or [ab] would visibly expand) and a fake
// home whose jax-tpu-lab/.venv/bin/python records its argv and environment.
class Sandbox {
public:
  Sandbox() {
    std::string pattern = (fs::temp_directory_path() / "tpulaunch-property.XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("mkdtemp failed");
    }
    m_root = pattern;
    fs::create_directories(cwd());
    for (const char* bait : {"a", "b", "x", "jaxt", "jaxu", "lesson.py"}) {
      std::ofstream(cwd() / bait) << "bait\n";
    }
    const fs::path venv = home() / "jax-tpu-lab/.venv/bin";
    fs::create_directories(venv);
    write(venv / "python",
          "#!/bin/sh\n"
          "printf '%s\\0' \"$(($# + 3))\" python \"TPU_RUN_DIR=${TPU_RUN_DIR-<unset>}\" "
          "\"JAX_PLATFORMS=${JAX_PLATFORMS-<unset>}\" \"$@\" >>\"$LOG\"\n"
          "echo out\necho err >&2\nexit \"${FAKE_PY_STATUS:-0}\"\n");
    fs::permissions(venv / "python", fs::perms::owner_all);
  }
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;
  ~Sandbox() {
    std::error_code ec;
    fs::remove_all(m_root, ec);
  }

  [[nodiscard]] fs::path root() const { return m_root; }
  [[nodiscard]] fs::path cwd() const { return m_root / "cwd"; }
  [[nodiscard]] fs::path home() const { return m_root / "home"; }

  static void write(const fs::path& path, std::string_view content) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
  }

  static std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream content;
    content << in.rdbuf();
    return content.str();
  }

  // Runs `driver` (bash source) over `cases` (with `modes`, one per case, when given), split over
  // k_shards bash processes running at once, each with a clean environment. Returns the record
  // streams (stdout, or $LOG when `from_log`) of all shards in case order; `problem` is set when
  // a shard's bash failed.
  std::string run_batched(const std::string& name, std::string_view driver, const std::vector<std::string>& cases,
                          const std::vector<std::string>& modes, bool from_log, const std::string& locale,
                          std::string& problem) const {
    constexpr std::size_t k_shards = 2; // the machines this runs on have two cores
    write(m_root / (name + ".sh"), driver);
    std::string command = fmt::format("cd '{}/cwd' &&", m_root.string());
    const std::size_t per_shard = (cases.size() + k_shards - 1) / k_shards;
    for (std::size_t shard = 0; shard < k_shards; ++shard) {
      const std::size_t begin = std::min(cases.size(), shard * per_shard);
      const std::size_t end = std::min(cases.size(), begin + per_shard);
      const auto slice = [&](const std::vector<std::string>& items) {
        return items.empty() ? std::vector<std::string>()
                             : std::vector<std::string>(items.begin() + static_cast<std::ptrdiff_t>(begin),
                                                        items.begin() + static_cast<std::ptrdiff_t>(end));
      };
      const std::string base = fmt::format("{}/{}.{}", m_root.string(), name, shard);
      write(base + ".cases", join_nul(slice(cases)));
      write(base + ".modes", join_nul(slice(modes)));
      write(base + ".log", "");
      command += fmt::format(" (env -i PATH=/usr/bin:/bin HOME='{0}/home' LOG='{1}.log' LC_ALL={2} bash '{0}/{3}.sh' "
                             "'{1}.cases' '{1}.modes' >'{1}.out' 2>'{1}.err'; echo $? >'{1}.rc') &",
                             m_root.string(), base, locale, name);
    }
    command += " wait";
    const int status = std::system(command.c_str());
    if (status != 0) {
      problem = fmt::format("the shell running the shards failed ({})", status);
    }
    std::string records;
    for (std::size_t shard = 0; shard < k_shards; ++shard) {
      const std::string base = fmt::format("{}/{}.{}", m_root.string(), name, shard);
      if (const std::string rc = read(base + ".rc"); rc != "0\n") {
        problem = fmt::format("bash exited {}: {}", rc, read(base + ".err").substr(0, 400));
      }
      records += read(base + (from_log ? ".log" : ".out"));
    }
    return records;
  }

  [[nodiscard]] bool injected() const { return fs::exists(cwd() / "pwned") || fs::exists(home() / "pwned"); }

private:
  fs::path m_root;
};

// A record is one program's argv (or a marker); records come as "count\0field\0...".
using Record = std::vector<std::string>;

// Splits a record stream into cases: each case starts with the one-field record "CASE".
std::vector<std::vector<Record>> parse_cases(std::string_view data, std::string& problem) {
  const auto fields = split_nul(data);
  std::vector<std::vector<Record>> cases;
  std::size_t i = 0;
  while (i < fields.size()) {
    std::size_t count = 0;
    const auto& head = fields[i];
    if (head.empty() || head.find_first_not_of("0123456789") != std::string::npos || head.size() > 7) {
      problem = fmt::format("record stream out of step at field {} ('{}')", i, printable(head));
      return cases;
    }
    count = std::stoul(head);
    if (i + 1 + count > fields.size()) {
      problem = "record stream truncated";
      return cases;
    }
    Record record(fields.begin() + static_cast<std::ptrdiff_t>(i + 1),
                  fields.begin() + static_cast<std::ptrdiff_t>(i + 1 + count));
    i += 1 + count;
    if (record == Record{"CASE"}) {
      cases.emplace_back();
    } else if (cases.empty()) {
      problem = "a record before the first case";
      return cases;
    } else {
      cases.back().push_back(std::move(record));
    }
  }
  return cases;
}

std::string show(const Record& record) {
  std::string out = "[";
  for (std::size_t i = 0; i < record.size(); ++i) {
    const std::string field = printable(record[i]);
    out += (i == 0 ? "" : ", ") + (field.size() > 200 ? field.substr(0, 200) + "..." : field);
  }
  return out + "]";
}

std::string show(const std::vector<Record>& records) {
  std::string out;
  for (const auto& r : records) {
    out += show(r) + " ";
  }
  return out;
}

// Level a: each case is one rendered local line, evaluated as the arguments of a recorder
// function (`rec` takes the place of the program, so gcloud, ssh-add, python and tpulaunch all
// just print their argv). hostname is defined for the Word property below.
constexpr std::string_view k_local_driver = R"(set -u
rec() { printf '%s\0' "$#" "$@"; }
hostname() { printf '%s\n' t1v-n-fake-w-3; }
# An each-worker fetch names the worker as the code "$w" (k_each_worker), which argv() keeps as
# written: w expands to that same text, so the line's every other word is still compared.
w='"$w"'
mapfile -d '' -t lines <"$1"
for line in "${lines[@]}"; do
  printf '1\0CASE\0'
  eval "rec $line" || printf '1\0EVAL-FAILED\0'
done
)";

// Level b: each case is one --command string, run the way the remote shell would run it (bash
// parses it as a script), in a subshell with recorders for the programs it calls. The fake
// python (a file, since the command calls it by path) records itself; sha256sum and tee also
// record what reached their stdin, which checks the printf format and the 2>&1 redirection.
constexpr std::string_view k_remote_driver = R"sh(set -u
rec() { builtin printf '%s\0' "$#" "$@" >>"$LOG"; }
set() { rec set "$@"; builtin set "$@"; }
mkdir() { rec mkdir "$@"; command mkdir "$@"; }
mv() { rec mv "$@"; }
# `command -v X` finds only an executable path (the fake venv python): no function of this driver
# and no program of this machine may pass for a worker's interpreter.
command() { if [[ $1 == -v ]]; then [[ $2 == */* && -x $2 ]]; return; fi; builtin command "$@"; }
python3() { rec python3 "$@"; }
echo() { rec echo "$@"; }
hostname() { builtin printf '%s\n' t1v-n-fake-w-3; }
tee() { local input=''; IFS= read -r -d '' input || true; rec tee "$@" "<stdin>$input"; }
sha256sum() { local input=''; IFS= read -r -d '' input || true; rec sha256sum "$@" "<stdin>$input"; return "$FAKE_SHA_STATUS"; }
# The run guard (src/remote/run_guard/) is `bash FILE ARGS...`: recorded with the file and its
# arguments as the remote shell passed them (its own behaviour is tests/remote/run_guard_test.bash).
bash() {
  rec bash "$@"
  return "$FAKE_PY_STATUS"
}
export FAKE_SHA_STATUS=0 FAKE_PY_STATUS=0 FAKE_UPLOAD_STATUS=0
# One case at a time from the files, not all of them in arrays: every case runs in a subshell, and
# a fork costs in proportion to this shell's memory (tens of MB of commands made it the test's
# bottleneck).
exec 3<"$1" 4<"$2"
while IFS= read -r -d '' command <&3; do
  IFS= read -r -d '' mode <&4 || true
  FAKE_SHA_STATUS=${mode%%:*}
  rest=${mode#*:}
  FAKE_PY_STATUS=${rest%%:*}
  FAKE_UPLOAD_STATUS=${rest#*:}
  builtin printf '1\0CASE\0' >>"$LOG"
  status=0
  ( eval "$command" ) || status=$?
  builtin printf '2\0STATUS\0%s\0' "$status" >>"$LOG"
done
)sh";

// Failures collected over many values, reported with a few examples and a count.
class Failures {
public:
  void add(std::string what) {
    ++m_count;
    if (m_examples.size() < k_max_reported) {
      m_examples.push_back(std::move(what));
    }
  }
  [[nodiscard]] std::size_t count() const { return m_count; }
  [[nodiscard]] std::string report() const {
    std::string out = fmt::format("{} failure(s); first ones:\n", m_count);
    for (const auto& e : m_examples) {
      out += "  - " + e + "\n";
    }
    return out;
  }

private:
  std::size_t m_count = 0;
  std::vector<std::string> m_examples;
};

// Runs `driver` over `cases` (Sandbox::run_batched) and splits the records into cases; a shard
// that failed, a record stream out of step, or fewer cases than were given is a failure.
std::vector<std::vector<Record>> run_cases(const Sandbox& sandbox, const std::string& name, std::string_view driver,
                                           const std::vector<std::string>& cases, const std::vector<std::string>& modes,
                                           bool from_log, const std::string& locale, std::string_view what,
                                           Failures& failures) {
  std::string problem;
  const std::string records = sandbox.run_batched(name, driver, cases, modes, from_log, locale, problem);
  if (!problem.empty()) {
    failures.add(problem);
    problem.clear();
  }
  auto parsed = parse_cases(records, problem);
  if (!problem.empty()) {
    failures.add(problem);
  }
  if (parsed.size() != cases.size()) {
    failures.add(fmt::format("bash ran {} of {} {}", parsed.size(), cases.size(), what));
  }
  return parsed;
}

// Local lines, deduplicated by rendered text. Two different argvs that render to the same text
// would be a quoting bug in itself (the renderer must be injective), so that is checked here too.
class LocalCases {
public:
  void add(const ShellLine& line, const std::string& origin, Failures& failures) {
    std::string text = to_shell(line);
    const auto argv = line.argv();
    if (text.find('\0') != std::string::npos) {
      failures.add(fmt::format("{}: a NUL byte reached a rendered command: {}", origin, printable(text.substr(0, 200))));
      return;
    }
    auto [it, inserted] = m_expected.emplace(text, argv);
    if (!inserted && it->second != argv) {
      failures.add(fmt::format("{}: two argvs render as the same text {}", origin, printable(text.substr(0, 200))));
      return;
    }
    if (inserted) {
      m_lines.push_back(std::move(text));
    }
  }

  // Runs every line through bash and compares; returns how many lines were checked.
  std::size_t check(const Sandbox& sandbox, const std::string& name, Failures& failures,
                    const std::string& locale = "C") const {
    const auto cases = run_cases(sandbox, name, k_local_driver, m_lines, {}, false, locale, "lines", failures);
    for (std::size_t i = 0; i < std::min(cases.size(), m_lines.size()); ++i) {
      const auto& expected = m_expected.at(m_lines[i]);
      if (cases[i].size() != 1 || cases[i][0] != expected) {
        failures.add(fmt::format("line {} parsed as {} instead of {}", printable(m_lines[i].substr(0, 300)),
                                 show(cases[i]), show(expected)));
      }
    }
    if (sandbox.injected()) {
      failures.add("a generated value ran a command (the file 'pwned' exists)");
    }
    return m_lines.size();
  }

  [[nodiscard]] std::size_t size() const { return m_lines.size(); }

private:
  std::unordered_map<std::string, std::vector<std::string>> m_expected;
  std::vector<std::string> m_lines;
};

// What the remote shell is expected to do with one --command string.
struct RemoteExpectation {
  std::vector<Record> records; // in any order (pipelines run concurrently)
  int status = 0;
  std::string origin;
};

class RemoteCases {
public:
  void add(std::string command, std::string mode, RemoteExpectation expectation) {
    std::string key = command + '\0' + mode;
    if (m_seen.insert(key).second) {
      m_commands.push_back(std::move(command));
      m_modes.push_back(std::move(mode));
      m_expected.push_back(std::move(expectation));
    }
  }

  std::size_t check(const Sandbox& sandbox, const std::string& name, Failures& failures,
                    const std::function<bool(const Record& expected, const Record& actual)>& same) const {
    const auto cases =
        run_cases(sandbox, name, k_remote_driver, m_commands, m_modes, true, "C", "remote commands", failures);
    for (std::size_t i = 0; i < std::min(cases.size(), m_commands.size()); ++i) {
      std::vector<Record> actual = cases[i];
      const RemoteExpectation& expected = m_expected[i];
      const Record status_record{"STATUS", std::to_string(expected.status)};
      bool ok = !actual.empty() && actual.back() == status_record;
      if (ok) {
        actual.pop_back();
        ok = actual.size() == expected.records.size();
        std::vector<bool> used(actual.size(), false);
        for (const auto& want : expected.records) {
          bool found = false;
          for (std::size_t k = 0; ok && k < actual.size() && !found; ++k) {
            if (!used[k] && same(want, actual[k])) {
              used[k] = true;
              found = true;
            }
          }
          ok = ok && found;
        }
      }
      if (!ok) {
        failures.add(fmt::format("{} (mode {}): remote command {} did {} instead of {} and exit {}", expected.origin,
                                 m_modes[i], printable(m_commands[i].substr(0, 300)), show(cases[i]),
                                 show(expected.records), expected.status));
      }
    }
    if (sandbox.injected()) {
      failures.add("a generated value ran a command on the remote side (the file 'pwned' exists)");
    }
    return m_commands.size();
  }

  [[nodiscard]] std::size_t size() const { return m_commands.size(); }

private:
  std::set<std::string> m_seen;
  std::vector<std::string> m_commands;
  std::vector<std::string> m_modes;
  std::vector<RemoteExpectation> m_expected;
};

// --- plans built from generated values ----------------------------------------------------------

constexpr std::string_view k_command_flag = "--command=";

bool same_record(const Record& expected, const Record& actual) { return expected == actual; }

struct Mode {
  int sha_status = 0;
  int py_status = 0;
  int upload_status = 0; // the worker's `gcloud storage cp` (--results)
  [[nodiscard]] std::string text() const { return fmt::format("{}:{}:{}", sha_status, py_status, upload_status); }
};

// The remote side's behaviour for one ssh step, from the plan's own fields: the words each
// program receives, with ~/ as the fake home and "$(hostname)" as the fake hostname.
RemoteExpectation expect_remote(const Plan& plan, const Step& step, const Mode& mode, const fs::path& home_dir) {
  const std::string home = home_dir.string() + "/";
  const std::string lab = home + "jax-tpu-lab/";
  const std::string python = "python";
  RemoteExpectation e;
  // The run guard is in the run's stage folder (which the stage step copied into the run's folder),
  // called by its path with the digest it checks itself against, the plan's digest and the run
  // key (and the mark of a TPU the plan made); every value reaches it as one argument.
  const RemoteProgram& guard_program = run_guard_program();
  Record guard{"bash",     home + plan.remote_staged_dir() + "/tpulaunch-run-guard.sh",
               "--guard-sha256", guard_program.sha256,
               "--plan",   plan.plan_sha256,
               "--script", plan.script,
               "--run-id", plan.options.run_id};
  if (!plan.target.mark.empty()) {
    guard.insert(guard.end(), {"--mark", plan.target.mark});
  }
  if (step.kind == StepKind::bootstrap) {
    guard.push_back("--bootstrap");
    e.records = {std::move(guard)};
    e.status = mode.py_status;
    return e;
  }
  if (plan.options.form == PlanForm::course) {
    e.records = {{"set", "-o", "pipefail"},
                 {python, "TPU_RUN_DIR=<unset>", "JAX_PLATFORMS=tpu", lab + plan.script + ".py"},
                 {"tee", lab + plan.script + "-tpu.txt", "<stdin>out\n"}};
    e.status = mode.py_status;
    return e;
  }
  // Each staged file is named by its digest and its path below the stage folder's code/.
  for (const StagedFile& file : plan.staged) {
    guard.insert(guard.end(), {"--file", file.sha256, file.path});
  }
  guard.push_back("--devices");
  guard.push_back(std::string(to_string(plan.target.slice->devices)));
  if (plan.results_run_url) {
    guard.push_back("--upload");
    guard.push_back(*plan.results_run_url);
  }
  guard.push_back("--env");
  guard.push_back("JAX_PLATFORMS=tpu");
  for (const EnvVar& var : plan.env) {
    guard.push_back("--env");
    guard.push_back(var.name + "=" + var.value);
  }
  const std::string& chosen = plan.options.python;
  guard.push_back("--python");
  guard.push_back(chosen.empty()             ? lab + ".venv/bin/python"
                  : chosen.starts_with("~/") ? home + chosen.substr(2)
                                             : chosen);
  guard.push_back("--");
  guard.push_back(gcloud::local_path(plan.staged.front().path));
  for (const std::string& arg : plan.options.args) {
    guard.push_back(arg);
  }
  e.records.push_back(std::move(guard));
  e.status = mode.py_status;
  return e;
}

// One generated value, as the options and script of a plan.
struct Variant {
  PlanOptions options;
  std::string script_id = "lesson";
  std::string path;            // empty: the matrix's path for script_id
  const Slice* slice = nullptr;
  bool discovery = false;
};

class PlanPropertyTest : public ::testing::Test {
protected:
  void SetUp() override {
    m_multi = m_catalog->find("v5litepod-16");
    m_single = m_catalog->find("v5litepod-8");
    ASSERT_NE(m_multi, nullptr);
    ASSERT_NE(m_single, nullptr);
    m_entry.id = "lesson";
    m_entry.class_name = "multi-host-qualified";
    m_entry.script_class = ScriptClass::multi_host_qualified;
    m_entry.sha256 = "5d41402abc4b2a76b9719d911017c592e5b8a3f0c3ae2f0f1e6f1ba2b8c5d0e1";
    m_matrix.base_dir = "course";
    m_matrix.origin = "course/execution-matrix.json";
  }

  // The plan configuration for the i-th value: every form, route and option combination in turn.
  Variant variant(std::size_t i) const {
    Variant v;
    v.options.tpu = "pod";
    v.options.zone = "us-west4-a";
    v.options.run_id = "r1";
    switch (i % 6) {
    case 0: v.slice = m_multi; v.options.bootstrap = true; v.options.teardown = true; v.options.project = "my-project-1"; break;
    case 1: v.slice = m_single; break;
    case 2: v.slice = m_multi; v.options.form = PlanForm::course; break;
    case 3: v.slice = m_single; v.options.form = PlanForm::course; v.options.project = "example.com:my-project"; break;
    case 4: v.slice = m_multi; v.discovery = true; v.options.teardown = true; break;
    default: v.slice = m_single; v.discovery = true; v.options.bootstrap = true; break;
    }
    return v;
  }

  Result<Plan> build(const Variant& v) const {
    if (v.discovery) {
      return build_discovery_plan(*v.slice, v.options);
    }
    ScriptStatus status;
    status.id = v.script_id;
    status.path = v.path.empty() ? m_matrix.script_path(v.script_id) : v.path;
    status.state = ReviewState::reviewed;
    status.entry = &m_entry;
    status.actual_sha256 = m_entry.sha256;
    return build_plan(status, v.slice->multi_host() ? RouteKind::multi_host : RouteKind::single_host, v.slice, v.options);
  }

  // Adds every step of `plan` to the local cases, and every --command string to the remote cases.
  void collect(const Plan& plan, std::size_t i, const std::string& origin, Failures& failures) {
    // Seven modes against six plan variants, so every mode meets every variant.
    static const std::array<Mode, 7> k_modes{
        {{0, 0, 0}, {0, 255, 0}, {0, 3, 0}, {1, 0, 0}, {0, 0, 1}, {0, 3, 1}, {0, 255, 1}}};
    for (const Step& step : plan.steps) {
      // A line such as `cd DIR && mkdir -p …` or `set -o pipefail; python3 FILE | tee …` holds
      // several commands joined by fixed code: each command's words are checked on their own.
      ShellLine command;
      for (const auto& element : step.line.elements()) {
        if (std::holds_alternative<Code>(element)) {
          if (!command.elements().empty()) {
            m_local.add(command, origin, failures);
          }
          command = ShellLine();
        } else {
          command.element(element);
        }
      }
      if (!command.elements().empty()) {
        m_local.add(command, origin, failures);
      }
      for (const auto& arg : step.line.argv()) {
        if (arg.starts_with(k_command_flag)) {
          const Mode mode = k_modes[i % k_modes.size()];
          RemoteExpectation expectation = expect_remote(plan, step, mode, m_sandbox.home());
          expectation.origin = origin + " step " + std::string(step.name());
          m_remote.add(arg.substr(k_command_flag.size()), mode.text(), std::move(expectation));
        }
      }
    }
  }

  // Where a user value must appear in the gcloud commands, intact and as a whole word.
  static void check_placement(const Plan& plan, ValueKind kind, const std::string& value, const std::string& origin,
                              Failures& failures) {
    for (const Step& step : plan.steps) {
      const auto argv = step.line.argv();
      if (argv.empty() || argv[0] != "gcloud") {
        continue;
      }
      const auto has = [&argv](const std::string& word) { return std::find(argv.begin(), argv.end(), word) != argv.end(); };
      bool ok = true;
      switch (kind) {
      case ValueKind::zone: ok = has("--zone=" + value); break;
      case ValueKind::project: ok = has("--project=" + value); break;
      case ValueKind::tpu_name:
        ok = has(value) || std::any_of(argv.begin(), argv.end(), [&](const std::string& a) {
               return a == value + ":" || a.starts_with(value + ":~/");
             });
        break;
      case ValueKind::results_url: {
        const std::string url = value.ends_with('/') ? value.substr(0, value.size() - 1) : value;
        ok = step.kind != StepKind::collect ||
             std::any_of(argv.begin(), argv.end(), [&](const std::string& a) { return a.starts_with(url + "/pod/"); });
        break;
      }
      default: break;
      }
      if (!ok) {
        failures.add(fmt::format("{}: step {} lacks the value {} as a word: {}", origin, step.name(), printable(value), show(argv)));
      }
    }
  }

  Sandbox m_sandbox;
  LocalCases m_local;
  RemoteCases m_remote;
  const Catalog* m_catalog = &test_support::embedded_catalog();
  const Slice* m_multi = nullptr;
  const Slice* m_single = nullptr;
  MatrixEntry m_entry;
  Matrix m_matrix;
};

std::string_view kind_name(ValueKind kind) {
  for (const auto& rule : value_rules()) {
    if (rule.kind == kind) {
      return rule.what;
    }
  }
  return "?";
}

TEST_F(PlanPropertyTest, EveryValueIsRefusedOrReachesBothShellsIntact) {
  Failures failures;
  std::map<ValueKind, std::pair<int, int>> tally; // accepted, refused
  int nul_values = 0;
  std::size_t long_values = 0;
  AdversarialStrings gen(20261202U);
  for (const auto kind : {ValueKind::tpu_name, ValueKind::zone, ValueKind::project, ValueKind::script_id, ValueKind::run_id,
                          ValueKind::interpreter, ValueKind::results_url}) {
    for (int n = 0; n < k_values_per_kind; ++n) {
      const auto i = static_cast<std::size_t>(n);
      const std::string value = gen.value(kind);
      const std::string origin = fmt::format("{} '{}'", kind_name(kind), printable(value));
      long_values += value.size() > 1024 ? 1U : 0U;
      Variant v = variant(i);
      switch (kind) {
      case ValueKind::tpu_name: v.options.tpu = value; break;
      case ValueKind::zone: v.options.zone = value; break;
      case ValueKind::project: v.options.project = value; break;
      case ValueKind::script_id:
        v.script_id = value;
        v.discovery = false;
        if (value.find('/') != std::string::npos) {
          v.options.form = PlanForm::full; // --course refuses a script in a subfolder (plan_test)
        }
        break;
      case ValueKind::run_id: v.options.run_id = value; break;
      case ValueKind::interpreter:
        v.options.python = value;
        v.options.form = PlanForm::full; // --course takes no --python
        break;
      case ValueKind::env_name: break; // names only; tested in validate_test
      case ValueKind::results_url:
        v.options.results = value;
        v.options.form = PlanForm::full; // --course takes no --results
        break;
      case ValueKind::queued_resource:
      case ValueKind::runtime_version:
      case ValueKind::timeout:
      case ValueKind::grace:
      case ValueKind::valid_until:
      case ValueKind::ready_timeout:
      case ValueKind::poll:
      case ValueKind::jax_platforms: break; // not among the kinds this loop draws (yet)
      }
      const Status valid = validate_value(kind, value);
      // An empty project means "no --project", an empty interpreter the default one, and an empty
      // results URL no --results, so none of them is a value that reaches a command.
      const bool omitted =
          (kind == ValueKind::project || kind == ValueKind::interpreter || kind == ValueKind::results_url) && value.empty();
      if (value.find('\0') != std::string::npos) {
        ++nul_values;
        if (valid.ok()) {
          failures.add(origin + ": a value with a NUL byte was accepted (argv would silently cut it)");
          continue;
        }
      }
      if (!valid.ok() && !omitted) {
        ++tally[kind].second;
        if (valid.error().code != ExitCode::usage || !valid.error().message.starts_with("invalid ") ||
            valid.error().message.find_first_of(std::string("\n\r\0", 3)) != std::string::npos) {
          failures.add(origin + ": refusal is not a one-line usage Error: " + printable(valid.error().message));
        }
        // Refused before any command exists: the planner and the script resolver refuse it too.
        if (kind == ValueKind::script_id) {
          auto resolved = resolve_script(m_matrix, value);
          if (resolved.ok() || resolved.error().code != ExitCode::usage) {
            failures.add(origin + ": resolve_script did not refuse it as a usage Error");
          }
        } else {
          auto plan = build(v);
          if (plan.ok() || plan.error().code != ExitCode::usage) {
            failures.add(origin + ": build_plan did not refuse it as a usage Error");
          }
        }
        continue;
      }
      ++tally[kind].first;
      if (kind == ValueKind::script_id) {
        auto resolved = resolve_script(m_matrix, value);
        if (!resolved.ok() || resolved->path != m_matrix.script_path(value)) {
          failures.add(origin + ": resolve_script refused a valid id or changed its path");
        }
      }
      auto plan = build(v);
      if (!plan.ok()) {
        failures.add(origin + ": a valid value was refused by the planner: " + plan.error().message);
        continue;
      }
      if (!omitted) {
        check_placement(*plan, kind, value, origin, failures);
      }
      collect(*plan, i, origin, failures);
    }
  }
  const std::size_t local = m_local.check(m_sandbox, "local", failures);
  const std::size_t remote = m_remote.check(m_sandbox, "remote", failures, same_record);
  EXPECT_EQ(failures.count(), 0U) << failures.report();

  // The generator must really exercise both outcomes, NULs and long values.
  for (const auto& [kind, counts] : tally) {
    EXPECT_GT(counts.first, 1000) << kind_name(kind) << ": too few accepted values to exercise the plans";
    EXPECT_GT(counts.second, 1000) << kind_name(kind) << ": too few refused values";
    RecordProperty(fmt::format("{} accepted/refused", kind_name(kind)), fmt::format("{}/{}", counts.first, counts.second));
  }
  EXPECT_GT(nul_values, 100);
  EXPECT_GT(long_values, 50U);
  EXPECT_GT(local, 5000U);
  EXPECT_GT(remote, 1000U);
  RecordProperty("local_lines", static_cast<int>(local));
  RecordProperty("remote_commands", static_cast<int>(remote));
}

// A JSON string literal of `value`, bytes >= 0x20 kept raw (so invalid UTF-8 reaches the reader).
std::string json_string(std::string_view value) {
  std::string out = "\"";
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20) {
      out += fmt::format("\\u{:04x}", byte);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

Result<Matrix> matrix_with_directory(const std::string& directory, std::size_t i) {
  const std::string json = fmt::format(R"({{"version": 1, "exercises_dir": {}, "scripts": {{}}}})", json_string(directory));
  // Every other value with the matrix in the working folder, where the path starts with the folder.
  return parse_matrix(json, i % 2 == 0 ? "execution-matrix.json" : "course/execution-matrix.json");
}

TEST_F(PlanPropertyTest, ExercisesDirIsRefusedOrReachesTheCommandsIntact) {
  Failures failures;
  Failures nul_accepted;
  int accepted = 0;
  int refused = 0;
  AdversarialStrings gen(7U);
  for (int n = 0; n < k_values_per_kind; ++n) {
    const auto i = static_cast<std::size_t>(n);
    const std::string directory = gen.directory();
    const std::string origin = fmt::format("exercises_dir '{}'", printable(directory));
    auto matrix = matrix_with_directory(directory, i);
    if (!matrix.ok()) {
      ++refused;
      if (matrix.error().code != ExitCode::config || matrix.error().message.find('\n') != std::string::npos) {
        failures.add(origin + ": refusal is not a one-line config Error: " + printable(matrix.error().message));
      }
      continue;
    }
    ++accepted;
    const std::string path = matrix->script_path("lesson");
    if (path.find('\0') != std::string::npos) {
      nul_accepted.add(origin + ": accepted with a NUL byte, so the script path holds one (argv would silently cut it)");
      continue;
    }
    Variant v = variant(i);
    v.discovery = false;
    v.path = path;
    auto plan = build(v);
    if (!plan.ok()) {
      failures.add(origin + ": refused by the planner: " + plan.error().message);
      continue;
    }
    collect(*plan, i, origin, failures);
    // And the CPU route, where the path is python's argument.
    ScriptStatus status;
    status.id = "lesson";
    status.path = path;
    auto cpu = build_plan(status, RouteKind::cpu, nullptr, v.options);
    ASSERT_TRUE(cpu.ok());
    collect(*cpu, i, origin + " (cpu)", failures);
  }
  const std::size_t local = m_local.check(m_sandbox, "local", failures);
  const std::size_t remote = m_remote.check(m_sandbox, "remote", failures, same_record);
  EXPECT_EQ(failures.count(), 0U) << failures.report();
  // NUL bytes must be refused by the matrix reader, not cut by exec (see NulInExercisesDirIsRefused).
  EXPECT_EQ(nul_accepted.count(), 0U) << nul_accepted.report();
  EXPECT_GT(accepted, 3000);
  EXPECT_GT(refused, 1000);
  EXPECT_GT(local, 3000U);
  EXPECT_GT(remote, 0U);
  RecordProperty("accepted", accepted);
  RecordProperty("refused", refused);
  RecordProperty("local_lines", static_cast<int>(local));
  RecordProperty("remote_commands", static_cast<int>(remote));
}

// gcloud's own grammar (docs/gcloud.md §2.2): a local path that starts with '-' is read
// as an option, and one whose text before the first ':' matches gcloud's remote pattern
// ^(?:([^:@]+)@)?([^.:/\\@][^:/\\@]*)$ is read as INSTANCE:PATH. Quoting cannot help there; the
// plan has to write such a path as ./path.
bool gcloud_reads_as_remote(std::string_view argument) {
  const auto colon = argument.find(':');
  if (colon == std::string_view::npos) {
    return false;
  }
  std::string_view host = argument.substr(0, colon);
  if (const auto at = host.find('@'); at != std::string_view::npos) {
    const auto user = host.substr(0, at);
    if (user.empty() || user.find(':') != std::string_view::npos) {
      return false;
    }
    host = host.substr(at + 1);
  }
  if (host.empty() || host.front() == '.') {
    return false;
  }
  return host.find_first_of(":/\\@") == std::string_view::npos;
}

TEST(GcloudGrammar, RemotePatternMatchesTheDocumentedExamples) {
  EXPECT_TRUE(gcloud_reads_as_remote("foo:bar"));
  EXPECT_TRUE(gcloud_reads_as_remote("me@pod:~/x"));
  EXPECT_FALSE(gcloud_reads_as_remote("./foo:bar"));
  EXPECT_FALSE(gcloud_reads_as_remote("a/b:c"));
  EXPECT_FALSE(gcloud_reads_as_remote("public/exercises/x.py"));
}

TEST_F(PlanPropertyTest, LocalScriptPathIsNeverReadAsAnOptionOrARemote) {
  Failures failures;
  int checked = 0;
  AdversarialStrings gen(7U); // the same values as ExercisesDirIsRefusedOrReachesTheCommandsIntact
  for (int n = 0; n < k_values_per_kind; ++n) {
    const auto i = static_cast<std::size_t>(n);
    const std::string directory = gen.directory();
    auto matrix = matrix_with_directory(directory, i);
    if (!matrix.ok() || directory.find('\0') != std::string::npos) {
      continue;
    }
    Variant v = variant(i);
    v.discovery = false;
    v.path = matrix->script_path("lesson");
    auto plan = build(v);
    ScriptStatus status;
    status.id = "lesson";
    status.path = v.path;
    auto cpu = build_plan(status, RouteKind::cpu, nullptr, v.options);
    if (!plan.ok() || !cpu.ok()) {
      continue;
    }
    ++checked;
    // set -o pipefail; python3 PATH | tee ID-cpu.txt.partial && mv -f ID-cpu.txt.partial ID-cpu.txt
    const auto python = cpu->steps.at(0).line.argv();
    if (python.size() != 11 || python[4].starts_with('-')) {
      failures.add(fmt::format("cpu run {} would pass an option to python", show(python)));
    }
    for (const Step& step : plan->steps) {
      const auto argv = step.line.argv();
      if (step.kind == StepKind::write) {
        // tpulaunch stage ... --file LOCAL SHA256:PATH: neither word may read as an option.
        for (std::size_t k = 0; k + 2 < argv.size(); ++k) {
          if (argv[k] == "--file" && (argv[k + 1].starts_with('-') || argv[k + 2].starts_with('-'))) {
            failures.add(fmt::format("exercises_dir '{}': the write step passes {} {}, read as an option",
                                     printable(directory), printable(argv[k + 1]), printable(argv[k + 2])));
          }
        }
      } else if (step.kind == StepKind::run &&
                 (argv.back().find(" -- -") != std::string::npos || argv.back().find(" -- '-") != std::string::npos)) {
        failures.add(fmt::format("exercises_dir '{}': the interpreter gets a script path it reads as an option",
                                 printable(directory)));
      }
    }
  }
  EXPECT_GT(checked, 3000);
  EXPECT_EQ(failures.count(), 0U) << failures.report();
}

// Directly: shell_quote and to_shell(ShellLine) on random argv vectors, in both locales, and Words
// mixing literal parts with the two deliberate expansions.
std::vector<std::string> random_argv(AdversarialStrings& gen) {
  std::vector<std::string> argv;
  const int n = gen.uniform(1, 8);
  for (int k = 0; k < n; ++k) {
    std::string word = gen.any();
    std::erase(word, '\0'); // argv cannot hold NUL; NUL values are refused by validation (above)
    argv.push_back(std::move(word));
  }
  return argv;
}

TEST(ShellProperty, QuotedArgvRoundTripsThroughBash) {
  const Sandbox sandbox;
  for (const char* const locale_name : {"C", "C.UTF-8"}) {
    const std::string locale(locale_name);
    Failures failures;
    LocalCases cases;
    AdversarialStrings gen(locale == "C" ? 1U : 2U);
    for (int n = 0; n < 15000; ++n) {
      ShellLine line;
      const auto argv = random_argv(gen);
      for (const auto& w : argv) {
        line.word(w);
        // A single word is shell_quote's output as it is.
        if (to_shell(Word(w)) != shell_quote(w)) {
          failures.add("to_shell(Word) differs from shell_quote for " + printable(w));
        }
      }
      cases.add(line, "argv " + show(argv), failures);
    }
    const std::size_t checked = cases.check(sandbox, "argv-" + locale, failures, locale);
    EXPECT_GT(checked, 14000U);
    EXPECT_EQ(failures.count(), 0U) << "LC_ALL=" << locale << ": " << failures.report();
  }
}

TEST(ShellProperty, SafeSetIsExactlyTheBareSet) {
  // Every single byte: bare exactly when it is in the documented safe set, and then bash leaves
  // it alone; otherwise quoted. (The round trip above covers what quoting does.)
  const std::string_view safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-";
  for (int b = 1; b < 256; ++b) {
    const std::string value(1, static_cast<char>(b));
    const bool bare = shell_quote(value) == value;
    EXPECT_EQ(bare, safe.find(static_cast<char>(b)) != std::string_view::npos) << "byte " << b;
  }
  EXPECT_EQ(shell_quote(""), "''");
}

TEST(ShellProperty, WordsExpandOnlyTheirCodeParts) {
  const Sandbox sandbox;
  Failures failures;
  AdversarialStrings gen(3U);
  const std::string home = sandbox.home().string() + "/";
  // Expected argv texts are computed here with the expansions done, so LocalCases compares the
  // expanded words; argv() itself keeps the code as written.
  struct Expected {
    std::string rendered;
    std::vector<std::string> argv;
  };
  std::vector<Expected> all;
  for (int n = 0; n < 3000; ++n) {
    std::vector<Word> words;
    std::vector<std::string> expanded;
    const int count = gen.uniform(1, 4);
    for (int k = 0; k < count; ++k) {
      Word w;
      std::string text;
      if (gen.uniform(0, 1) == 0) {
        w.append(k_home);
        text += home;
      }
      const int parts = gen.uniform(1, 3);
      for (int p = 0; p < parts; ++p) {
        std::string literal = gen.any();
        std::erase(literal, '\0');
        if (gen.uniform(0, 4) == 0) { // each expansion costs bash a fork: keep them few
          w.append(k_hostname);
          text += k_fake_host;
        }
        w.append(literal);
        text += literal;
      }
      words.push_back(std::move(w));
      expanded.push_back(std::move(text));
    }
    ShellLine line;
    line.words(words);
    all.push_back({to_shell(line), expanded});
  }
  // Reuse the local driver directly: its `rec` prints the words, `hostname` is defined there.
  std::vector<std::string> lines;
  for (const auto& e : all) {
    lines.push_back(e.rendered);
  }
  std::string problem;
  const std::string records = sandbox.run_batched("words", k_local_driver, lines, {}, false, "C", problem);
  ASSERT_TRUE(problem.empty()) << problem;
  const auto results = parse_cases(records, problem);
  ASSERT_TRUE(problem.empty()) << problem;
  ASSERT_EQ(results.size(), all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (results[i].size() != 1 || results[i][0] != all[i].argv) {
      failures.add(fmt::format("{} gave {} instead of {}", printable(all[i].rendered.substr(0, 300)), show(results[i]),
                               show(all[i].argv)));
    }
  }
  EXPECT_FALSE(sandbox.injected());
  EXPECT_EQ(failures.count(), 0U) << failures.report();
}

TEST(ShellProperty, HomeInsideAWordStaysLiteralLocally) {
  // gcloud scp's remote argument "pod:~/jax-tpu-lab/" must reach gcloud with its '~' (the remote
  // side expands it); the local bash must not, even with odd characters after it.
  const Sandbox sandbox;
  Failures failures;
  LocalCases cases;
  AdversarialStrings gen(4U);
  for (int n = 0; n < 2000; ++n) {
    std::string rest = gen.any();
    std::erase(rest, '\0');
    ShellLine line{"gcloud", Word("pod:").append(home_path(rest))};
    cases.add(line, "remote path", failures);
  }
  cases.check(sandbox, "home-word", failures);
  EXPECT_EQ(failures.count(), 0U) << failures.report();
}

TEST(ValidateProperty, NulBytesAreRefusedForEveryKind) {
  // argv cannot carry a NUL: a value with one must be refused, never cut short on its way to exec.
  AdversarialStrings gen(5U);
  for (const auto& rule : value_rules()) {
    for (int n = 0; n < 1000; ++n) {
      std::string value = gen.value(rule.kind);
      // Near the front, so that the message (which cuts a long value at 120 bytes) shows it.
      const auto at = gen.index(std::min<std::size_t>(value.size(), 20) + 1);
      value.insert(at, 1, '\0');
      const Status status = validate_value(rule.kind, value);
      ASSERT_FALSE(status.ok()) << rule.what << " accepted " << printable(value);
      EXPECT_EQ(status.error().code, ExitCode::usage);
      EXPECT_NE(status.error().message.find("\\x00"), std::string::npos) << status.error().message;
      EXPECT_EQ(status.error().message.find('\0'), std::string::npos);
    }
  }
}

TEST(ValidateProperty, NulInExercisesDirIsRefused) {
  // The matrix can spell a NUL as \u0000; the path built from it would be cut at the NUL by every
  // system call (the filesystem checks would inspect one file, the command name another).
  auto matrix = parse_matrix(R"({"version": 1, "exercises_dir": "public/exercises/x.py\u0000/y", "scripts": {}})",
                             "execution-matrix.json");
  ASSERT_FALSE(matrix.ok()) << "accepted; the script path is " << printable(matrix->script_path("x"));
  EXPECT_EQ(matrix.error().code, ExitCode::config);
  EXPECT_NE(matrix.error().message.find("execution-matrix.json:1:"), std::string::npos) << matrix.error().message;
}

} // namespace
} // namespace tpulaunch
