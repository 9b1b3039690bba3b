#pragma once
// The planner's parts, inside src/plan/: one function per step kind (steps.cpp for the run's own
// steps, capacity_steps.cpp for getting and giving back the TPU), the option checks (options.cpp)
// and the Target they resolve (target.cpp). plan.cpp puts them in order.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tpulaunch/plan/backend.hpp"
#include "tpulaunch/plan/plan.hpp"
#include "tpulaunch/remote/remote_program.hpp"
#include "tpulaunch/values/validate.hpp"

namespace tpulaunch::planning {

// The course's folder in each worker's home.
inline constexpr std::string_view k_lab = "jax-tpu-lab/";

// ~/jax-tpu-lab/<rest> on a worker.
Word lab_path(std::string_view rest);
// The run guard in the run's stage folder on a worker, and the arguments every call of it starts
// with (its digest, the plan's digest, the run key, the mark).
Word guard_path(const Plan& plan);
ShellLine guard_call(const Plan& plan);

// The describe call that prints the mark of slice `slice`'s node, when the plan created it
// (Target::mark); nullopt otherwise.
std::optional<ShellLine> mark_check(const Plan& plan, int slice);

// The --worker= value a call names, when it names one.
std::optional<std::string> worker_flag(const std::optional<Workers>& workers);
// PATH on the workers of slice `slice` (its node; the TPU itself on one slice).
Word remote(const Plan& plan, int slice, const Word& path);
// What a call that reaches every host reaches, for the plan's readers: all workers, or worker 0.
Workers every_worker(const Plan& plan);

// The slice a per-slice step names: nullopt on one slice, where steps name none.
std::optional<int> slice_of(const Plan& plan, int slice);
// " on slice S (node N)" for a summary, with --slices only.
std::string on_slice(const Plan& plan, int slice);

// The steps of the run itself (steps.cpp), in the order a plan has them.
Step prepare_step(const Plan& plan);
Step write_step(const Plan& plan);
Step preflight_step();
Step bootstrap_step(const Plan& plan, int slice);
Step stage_step(const Plan& plan, int slice);
Step cpu_run_step(const Plan& plan);
Step course_run_step(const Plan& plan);
// Per-slice steps take the slice (0 on one slice); fetch takes the JAX process (worker + slice x hosts).
Step full_run_step(const Plan& plan, const std::vector<Word>& program, std::string summary, int slice);
// The downloads (fetch_steps.cpp): fetch, fetch_loop_step, collect.
Step fetch_step(const Plan& plan, int process, bool full);
// Whether the plan's slices have more than k_fetch_lines_max hosts: then each slice's fetches are
// one step that loops over its workers (fetch_loop_step), and the download folders one word.
bool fetch_loops(const Plan& plan);
Step fetch_loop_step(const Plan& plan, int slice, bool full);
// --slices: ends the run on slice `slice` (its run guard's --stop), when another slice failed first.
Step stop_step(const Plan& plan, int slice);
Step collect_step(const Plan& plan);
Step verify_step(const Plan& plan);
Step teardown_step(const Plan& plan);

// The steps before staging that get the TPU and say how to give it back (capacity_steps.cpp).
Status add_capacity_steps(Plan& plan);

// The option checks (options.cpp), each a usage Error naming the value; request.cpp runs them.
// The values every route takes: the interpreter and the --env names; `reviewed` is the script's
// reviewed JAX_PLATFORMS, the one value --env JAX_PLATFORMS may repeat.
// `multislice`: the run spans slices (--slices), where the guard sets the MEGASCALE_* values.
Status validate_script_options(const PlanOptions& options, RouteKind route, std::string_view script = {},
                               std::string_view reviewed = {}, bool multislice = false);
// The names a TPU route needs (TPU, zone, project, run id); the CLI checks --parallel.
Status validate_tpu_options(const PlanOptions& options);
// The Target of `options` on `slices` x `slice` (target.cpp): checks that the capacity and provisioning flags
// go together (gcloud takes --preemptible on tpu-vm create only, --guaranteed on queued resources
// only, …) and fills the defaults (the catalog's runtime version, queued resource <tpu>-qr).
Result<Target> resolve_target(const PlanOptions& options, const Slice& slice, int slices);
// Resolves plan.target on `slices` x `slice` and the lifecycle's derived values (timeout, grace,
// bootstrap).
Status resolve_lifecycle(Plan& plan, const Slice& slice, int slices);
// The TPU-VM plan of a request that `validate` (request.hpp) has taken: its steps, in order.
Result<Plan> build_tpu_vm_plan(const ScriptStatus& script, RouteKind route, const Topology& topology,
                               const PlanOptions& options);
// --results: the bucket URL of the run folder.
Status set_results(Plan& plan, std::string_view id);
// --checkpoint-dir: checked as a bucket URL and written without a final '/'.
Status set_checkpoint_dir(Plan& plan);

} // namespace tpulaunch::planning
