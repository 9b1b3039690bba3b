// The steps that bring each worker's folder back: one download per worker (fetch), one per slice
// when its workers are many (a loop over "$w"), or, with --results, one call from the bucket
// (collect). Every download is independent of the others: a failure never stops the rest, and the
// report names it after all of them (OnFailure::report_after_all).
#include <algorithm>

#include <fmt/format.h>

#include "steps.hpp"
#include "tpulaunch/gcloud/gcloud.hpp"
#include "tpulaunch/receipts/run_folder.hpp"

namespace tpulaunch::planning {

using gcloud::local_path;

// What every fetch step is: a remote download beside the others, reported after all of them.
Step fetch_base(bool full) {
  Step step;
  step.kind = StepKind::fetch;
  step.where = StepWhere::remote;
  step.group = StepGroup::fetch;
  step.on_failure = OnFailure::report_after_all;
  step.check_preemption = full;
  return step;
}

// `process` is the JAX process (worker + slice x hosts): its slice's node, its worker there.
Step fetch_step(const Plan& plan, int process, bool full) {
  const int hosts = std::max(plan.target.hosts(), 1);
  const int slice = plan.target.multislice() ? process / hosts : 0;
  const int worker = plan.target.multislice() ? process % hosts : process;
  Step step = fetch_base(full);
  step.workers = Workers::one(worker);
  step.slice = slice_of(plan, slice);
  step.summary =
      fmt::format("bring back worker {}'s {}{}", worker, full ? "log and artifacts" : "log", on_slice(plan, slice));
  const std::string folder = process_folder(process, plan.target.hosts(), plan.target.nodes);
  step.line = gcloud::tpu_vm_scp({.sources = {full ? remote(plan, slice, home_path(plan.remote_run_dir))
                                                   : remote(plan, slice, lab_path(plan.script + "-tpu.txt"))},
                                  .destination = Word(local_path(fmt::format("{}/{}/", plan.local_run_dir, folder))),
                                  .recurse = full,
                                  .at = plan.target.location(),
                                  .worker = worker_flag(step.workers),
                                  .connection = plan.target.connection});
  // Pasted after a failed create, a fetch would read a TPU someone else holds (the sh form has
  // stopped by then: the steps before it checked the mark).
  step.mark_check = mark_check(plan, slice);
  return step;
}

bool fetch_loops(const Plan& plan) {
  return plan.target.hosts() > k_fetch_lines_max;
}

// The fetch of every worker of slice `slice`, written once: "$w" (k_each_worker) names the worker
// in --worker= and in its download folder, and the step runs for each w (Step::each_worker).
Step fetch_loop_step(const Plan& plan, int slice, bool full) {
  Step step = fetch_base(full);
  step.workers = Workers::all();
  step.slice = slice_of(plan, slice);
  step.each_worker = plan.target.hosts();
  step.summary = fmt::format("bring back the {} of each worker w from 0 to {}, one download each{}",
                             full ? "log and artifacts" : "log", plan.target.hosts() - 1, on_slice(plan, slice));
  step.line = gcloud::tpu_vm_scp({.sources = {full ? remote(plan, slice, home_path(plan.remote_run_dir))
                                                   : remote(plan, slice, lab_path(plan.script + "-tpu.txt"))},
                                  .destination = each_worker_folder(plan, slice),
                                  .recurse = full,
                                  .at = plan.target.location(),
                                  .worker = Word(k_each_worker),
                                  .connection = plan.target.connection});
  step.mark_check = mark_check(plan, slice);
  return step;
}

// --results: one local call brings every worker's folder back. The source's last part (the run
// id) is kept because the destination, the run folder's parent, exists: every worker lands in
// ./tpu-runs/<tpu>/<id>/<run-id>/worker-<i>/<run-id>/, where verify reads it.
Step collect_step(const Plan& plan) {
  Step step;
  step.kind = StepKind::collect;
  step.where = StepWhere::remote;
  step.on_failure = OnFailure::report_after_all; // the fallback fetches and the report still run
  step.check_preemption = true;                  // --results is the full form's
  step.workers = every_worker(plan);
  step.summary = "bring every worker's folder back from the results bucket, in one call";
  step.line = gcloud::storage_cp({*plan.results_run_url, run_folder_parent(plan), true});
  return step;
}

} // namespace tpulaunch::planning
