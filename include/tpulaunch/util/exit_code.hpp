#pragma once
// The process exit codes of tpulaunch, in one place. `tpulaunch --help` prints this table;
// README.md and docs/cli.md hold it by hand, and tests/docs_test.cpp checks that they list every
// row word for word. Scripts and CI jobs rely on the numbers, so they never change meaning.
#include <array>
#include <string_view>

namespace tpulaunch {

enum class ExitCode : int {
  success = 0,      // the product was printed: a plan, a report, a clean check
  failure = 1,      // an operation failed at run time (I/O, a lock held, a write that did not land)
  usage = 2,        // the command line or a value on it is invalid; nothing was done
  refused = 3,      // the request is unsafe: a route refused, a check or verify that found problems
  // A receipt is not config: it is what the run under verification wrote, so a malformed one is a
  // verify finding (3), as a missing or wrong one is, and a pipeline's status says "not verified"
  // whatever the run left. 4 is for the files a person writes and names: catalog, matrix, script
  // (check exits 4 too when a script of the course cannot be read).
  config = 4,       // a catalog, matrix or script file is malformed or unreadable
  interrupted = 130 // stopped by a signal (128 + SIGINT)
};

struct ExitCodeInfo {
  ExitCode code;
  std::string_view name;
  std::string_view meaning;
};

// The documented table, in numeric order; `--help` prints it, and docs_test checks the docs against it.
inline constexpr std::array<ExitCodeInfo, 6> k_exit_codes{{
    {ExitCode::success, "success", "the plan, report or listing was printed; check and verify found nothing"},
    {ExitCode::failure, "failure", "a run-time failure: a file could not be written, a lock is held"},
    {ExitCode::usage, "usage", "invalid command line or value (flag, slice name, TPU name, zone, id)"},
    {ExitCode::refused, "refused",
     "unsafe: route refused, stale or unreviewed script, check/verify findings (a malformed receipt is one)"},
    {ExitCode::config, "config",
     "a catalog, matrix, script (or a course module it imports) or run folder that is malformed, unreadable or missing "
     "(file and position named)"},
    {ExitCode::interrupted, "interrupted", "interrupted by a signal"},
}};

constexpr int to_int(ExitCode code) { return static_cast<int>(code); }

// The statuses of a generated pipeline (plan --format sh), besides 0, 1 and the program's own:
// the remote run guard's (src/remote/run_guard/, per worker; gcloud passes on the first
// non-zero in worker order) and the script's own stops. The guard's numbers are constants in
// that file too; tests/plan/plan_test.cpp keeps the two in step.
enum class PipelineStatus : int {
  run_running = 87, // remote, runs clean: the run is running on that worker; its folder is not removed
  not_ours = 88,   // remote or script: the TPU does not carry the mark of the plan that created it; nothing was touched
  name_taken = 89, // --create/--queued: a TPU or queued resource of that name exists already; nothing was created
  capacity_failed = 90,   // the queued resource (or created node) ended FAILED/SUSPENDED/…: deleted
  capacity_deadline = 91, // not READY / ACTIVE within --ready-timeout: what was created is deleted
  preempted = 92,         // the TPU was PREEMPTED, TERMINATED or REPAIRING during the pipeline
  run_exists = 93,        // the run folder exists already (here, or on a worker): this run id ran before
  tpu_busy = 94,          // remote: a process holds the TPU devices or libtpu's lock; nothing ran
  upload_failed = 95,     // remote, --results: the program succeeded, its upload did not
  no_python = 96,         // remote: the interpreter is not on the worker (a fresh VM); nothing ran
  digest_mismatch = 97,   // remote: a staged file (script, run guard) differs from its pinned digest; nothing ran
  guard_failed = 98,      // remote: the run guard could not start (its arguments, the run folder), or lost its run
  timed_out = 124,        // remote: the program ran past --timeout: SIGTERM, then SIGKILL after --grace
  mapped_255 = 254,       // remote: the program exited 255, which gcloud would take for ssh failing
};

struct PipelineStatusInfo {
  PipelineStatus status;
  std::string_view where; // "remote" (per worker, the run guard) or "script"
  std::string_view meaning;
};

// The documented table, in numeric order; docs/cli.md lists it and docs_test checks that.
inline constexpr std::array<PipelineStatusInfo, 14> k_pipeline_statuses{{
    {PipelineStatus::run_running, "remote",
     "tpulaunch runs clean: the run is still running on that worker (its record has no end and its supervisor "
     "lives), so its folder there is not removed"},
    {PipelineStatus::not_ours, "script",
     "--create or --queued: the TPU does not carry the mark the plan's create call set (metadata tpulaunch_run), so "
     "it is not the one the plan created; the plan touched nothing on it (its run guard says the same on a worker)"},
    {PipelineStatus::name_taken, "script",
     "--create or --queued: a TPU (or queued resource) of that name exists already, so the plan created nothing and "
     "touched nothing; its state is named"},
    {PipelineStatus::capacity_failed, "script",
     "the queued resource or created node ended FAILED, SUSPENDED or another state it does not leave; it was deleted"},
    {PipelineStatus::capacity_deadline, "script",
     "the TPU was not READY (or the queued resource ACTIVE) within --ready-timeout; what the script created was "
     "deleted"},
    {PipelineStatus::preempted, "script",
     "the TPU was PREEMPTED, TERMINATED or REPAIRING during the pipeline (not a failure of the program); one describe "
     "call after a failed step tells, spot or not"},
    {PipelineStatus::run_exists, "script",
     "the run folder exists already here, or the run ran on a worker with another plan (that worker's run guard says "
     "so): a run id names one run, and a second never overwrites the first; make a new plan"},
    {PipelineStatus::tpu_busy, "remote",
     "a process holds the TPU devices or libtpu's lock file on that worker; the program never started there"},
    {PipelineStatus::upload_failed, "remote",
     "with --results: the program succeeded on that worker, but its upload to the bucket did not"},
    {PipelineStatus::no_python, "remote",
     "the interpreter is not on that worker (a fresh TPU VM: add --bootstrap, or choose one with --python PATH); the "
     "program never started there"},
    {PipelineStatus::digest_mismatch, "remote",
     "a staged file differs from the SHA-256 the plan pinned (the script's reviewed digest, or the run guard's own); "
     "the program never started there"},
    {PipelineStatus::guard_failed, "remote",
     "the run guard could not start (its arguments, a staged file that is not there or one the plan did not stage; "
     "with --slices, a worker whose tpu-env MEGASCALE_* values are missing or not the plan's slice count and slice "
     "id), or the run's supervisor ended without recording an end (the VM restarted)"},
    {PipelineStatus::timed_out, "remote",
     "the program ran past --timeout: it got SIGTERM, then SIGKILL after --grace; every worker's results are still "
     "fetched"},
    {PipelineStatus::mapped_255, "remote",
     "the program exited 255, which gcloud would take for ssh failing and run again"},
}};

constexpr int to_int(PipelineStatus status) { return static_cast<int>(status); }

} // namespace tpulaunch
