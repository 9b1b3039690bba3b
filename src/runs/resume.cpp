// The rules of `plan --resume` (resume.hpp), on the old run's plan record.
#include "tpulaunch/runs/resume.hpp"

#include <tuple>

#include <fmt/format.h>

namespace tpulaunch {

Status resume_from(ResumeFields& fields, const RunView& run, std::string_view script) {
  const PlanRecord& old = run.plan;
  if (old.script != script) {
    return usage_error(fmt::format("--resume {}: that run is of script {}, not {}", old.run_id, old.script, script));
  }
  if (run.state == RunState::succeeded) {
    return refused_error(fmt::format("--resume {}: that run succeeded; a resume is for a run that was preempted, "
                                     "interrupted or failed",
                                     old.run_id));
  }
  // The values a resumed run keeps: given and different is an error; not given is the record's.
  for (auto [given, recorded, what] :
       {std::tuple{&fields.slice, &old.slice, "--slice"}, std::tuple{&fields.tpu, &run.tpu, "--tpu"},
        std::tuple{&fields.checkpoint_dir, &old.checkpoint_dir, "--checkpoint-dir"}}) {
    if (given->empty()) {
      *given = *recorded;
    } else if (*given != *recorded && !recorded->empty()) {
      return usage_error(
          fmt::format("--resume {}: {} {} is not the resumed run's ({}); a resumed run keeps it: leave it out",
                      old.run_id, what, printable(*given), printable(*recorded)));
    }
  }
  if (fields.zone.empty()) {
    fields.zone = old.zone;
  }
  if (fields.project.empty()) {
    fields.project = old.project;
  }
  if (old.slices > 1 && !fields.slices) {
    fields.slices = old.slices;
  }
  // Capacity made again when the old plan made it, provisioned as it was.
  fields.create = fields.create || (old.capacity == "create" && !fields.queued);
  fields.queued = fields.queued || (old.capacity == "queued" && !fields.create);
  fields.spot = fields.spot || old.provisioning == "spot";
  fields.preemptible = fields.preemptible || old.provisioning == "preemptible";
  if (fields.run_id == old.run_id) {
    return usage_error(fmt::format("--resume {}: the new run needs a new run id (leave --run-id out)", old.run_id));
  }
  return Ok{};
}

Status same_script(const RunView& run, std::string_view actual_sha256) {
  if (run.plan.script_sha256.empty()) {
    return config_error(fmt::format("--resume {}: its plan record ({}) has no script digest (an older tpulaunch, or "
                                    "the discovery program): it cannot be resumed",
                                    run.plan.run_id, run.folder));
  }
  if (run.plan.script_sha256 != actual_sha256) {
    return refused_error(fmt::format("--resume {}: script {} changed since that run (its sha256 was {}, now {}); a "
                                     "resumed run runs the same script: plan a new run without --resume",
                                     run.plan.run_id, run.plan.script, run.plan.script_sha256.substr(0, 16),
                                     actual_sha256.substr(0, 16)));
  }
  return Ok{};
}

} // namespace tpulaunch
