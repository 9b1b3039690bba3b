// The steps that get the TPU and give it back: name-check, create or queue, wait, release,
// preemption-check and teardown, each a gcloud call on the plan's Target.
#include <fmt/format.h>

#include "steps.hpp"
#include "tpulaunch/gcloud/gcloud.hpp"

namespace tpulaunch::planning {
namespace {

// The command that deletes what holds quota: the queued resource with its node (--force), or
// the node.
ShellLine delete_line(const Plan& plan) {
  if (plan.target.queued()) {
    return gcloud::queued_delete({plan.target.queued_resource, plan.target.location()});
  }
  return gcloud::tpu_vm_delete({plan.target.tpu, plan.target.location()});
}

std::string deleted_what(const Plan& plan) {
  if (plan.target.multislice()) {
    return fmt::format("the queued resource and its {} TPU VMs", plan.target.nodes);
  }
  return plan.target.queued() ? "the queued resource and its TPU VM" : "the TPU VM";
}

// The words a summary adds for --internal-ips.
constexpr std::string_view k_internal_only = ", internal addresses only";

// tpu-vm create ... --async: gcloud's own wait has no deadline, so the wait step polls instead.
Step create_step(const Plan& plan) {
  Step step;
  step.kind = StepKind::create;
  step.where = StepWhere::local; // a call to the TPU API from this machine, not to a worker
  step.makes_capacity = true;    // once it succeeded, a way out that leaves the TPU running says so
  step.summary = fmt::format("create the TPU VM ({}{}{}) and return at once; the wait step polls its state",
                             plan.target.slice->name,
                             plan.target.provisioning == Provisioning::standard
                                 ? ""
                                 : ", " + std::string(to_string(plan.target.provisioning)),
                             plan.target.internal_ips ? k_internal_only : "");
  step.line = gcloud::tpu_vm_create({plan.target.tpu, plan.target.location(), plan.target.slice->name,
                                     plan.target.runtime_version, plan.target.provisioning, true,
                                     plan.target.internal_ips, plan.target.mark});
  return step;
}

Step queue_step(const Plan& plan) {
  const Target& target = plan.target;
  const std::string valid_until = plan.options.lifecycle.valid_until ? plan.options.lifecycle.valid_until->text() : "";
  Step step;
  step.kind = StepKind::queue;
  step.where = StepWhere::local; // a call to the TPU API from this machine, not to a worker
  step.makes_capacity = true;    // once it succeeded, a way out that leaves the TPU running says so
  const std::string nodes = target.multislice() ? fmt::format("{} slices, nodes {} ... {}", target.nodes,
                                                              target.node(0), target.node(target.nodes - 1))
                                                : "node " + target.tpu;
  step.summary = fmt::format("ask for {} as queued resource {}, {}{}{}", target.slice->name, target.queued_resource,
                             nodes, target.internal_ips ? k_internal_only : "",
                             valid_until.empty() ? "" : ", waiting at most " + valid_until + " for capacity");
  step.line = gcloud::queued_create({target.queued_resource, target.tpu, target.location(), target.slice->name,
                                     target.runtime_version, target.provisioning, valid_until, target.nodes,
                                     target.internal_ips, target.mark});
  return step;
}

// The state of the TPU (with --slices, of slice `slice`'s node).
ShellLine node_state_line(const Plan& plan, int slice = 0) {
  return gcloud::tpu_vm_describe({plan.target.node(slice), plan.target.location(), "value(state)"});
}

// The one state query of what the plan asks for: the queued resource's state (--queued), or the
// TPU's. The name check and the wait both ask it.
ShellLine capacity_state_line(const Plan& plan) {
  if (plan.target.queued()) {
    return gcloud::queued_describe({plan.target.queued_resource, plan.target.location(), "value(state.state)"});
  }
  return node_state_line(plan);
}

// Before creating: what the plan is about to create must not exist yet. A TPU (or queued resource)
// of that name is not this plan's, so the plan refuses it, naming its state, rather than run on it
// or, later, delete it. The line is the describe call; the sh script refuses when it succeeds.
Step name_check_step(const Plan& plan) {
  const bool queued = plan.target.queued();
  Step step;
  step.kind = StepKind::name_check;
  step.where = StepWhere::local;
  step.summary = fmt::format("check that no {} named {} exists yet (this plan creates it): quiet when none does; one "
                             "that does is named, and the plan stops (exit {})",
                             queued ? "queued resource" : "TPU", plan.target.capacity_name(),
                             to_int(PipelineStatus::name_taken));
  step.line = capacity_state_line(plan);
  return step;
}

Step release_step(const Plan& plan) {
  Step step;
  step.kind = StepKind::release;
  step.where = StepWhere::local;
  step.when = StepWhen::capacity_unusable;
  step.summary = fmt::format("delete {} (it holds quota)", deleted_what(plan));
  step.line = delete_line(plan);
  // With --teardown only a failure leaves the TPU running; capacity the plan made without it is
  // left running on every way out.
  step.left_running = plan.options.teardown                        ? LeftRunning::on_failure
                      : plan.target.capacity != Capacity::existing ? LeftRunning::always
                                                                   : LeftRunning::never;
  return step;
}

// Node states a new node never leaves for READY; queued-resource states that never lead to ACTIVE.
const std::vector<std::string> k_node_dead_ends{"PREEMPTED", "TERMINATED", "STOPPED", "STOPPING", "DELETING", "HIDDEN"};
const std::vector<std::string> k_queued_dead_ends{"FAILED", "SUSPENDED", "SUSPENDING", "DELETING"};

Step wait_step(const Plan& plan, int poll_seconds, int deadline_seconds) {
  const bool queued = plan.target.queued();
  Step step;
  step.kind = StepKind::wait;
  step.where = StepWhere::local;
  step.poll = Poll{queued ? "ACTIVE" : "READY", queued ? k_queued_dead_ends : k_node_dead_ends, poll_seconds,
                   deadline_seconds};
  std::string stops;
  for (const auto& state : step.poll->stop_on) {
    stops += (stops.empty() ? "" : "/") + state;
  }
  step.summary = fmt::format("every {}s until {} is {}, for at most {}s; {}: delete it and stop (exit {})", poll_seconds,
                             plan.target.capacity_name(), step.poll->until, deadline_seconds, stops,
                             to_int(PipelineStatus::capacity_failed));
  step.line = capacity_state_line(plan);
  return step;
}

// One per slice: with --slices any slice's node may be the one preempted, and the run then fails
// on every slice (the others wait for it), so each node is asked. Every TPU plan has them, spot or
// not: a TPU made by hand may be a spot one, and any TPU may be in repair.
Step preemption_check_step(const Plan& plan, int slice) {
  Step step;
  step.kind = StepKind::preemption_check;
  step.where = StepWhere::local;
  step.when = StepWhen::step_failed;
  step.slice = slice_of(plan, slice);
  step.summary = fmt::format("ask for the TPU's state once{}: PREEMPTED, TERMINATED or REPAIRING is reported as such, "
                             "not as a failed program (exit {})",
                             on_slice(plan, slice), to_int(PipelineStatus::preempted));
  step.line = node_state_line(plan, slice);
  return step;
}

} // namespace

Step teardown_step(const Plan& plan) {
  Step step;
  step.kind = StepKind::teardown;
  step.where = StepWhere::local;
  step.when = StepWhen::verify_succeeded;
  step.summary = fmt::format("delete {}", deleted_what(plan));
  step.line = delete_line(plan);
  step.mark_check = mark_check(plan, 0);
  return step;
}

// The steps before staging that get the TPU and say how to give it back.
Status add_capacity_steps(Plan& plan) {
  const LifecycleOptions& life = plan.options.lifecycle;
  const bool queued = plan.target.queued();
  if (plan.target.capacity != Capacity::existing) {
    const int poll = life.poll ? static_cast<int>(life.poll->seconds()) : queued ? 60 : 15;
    const int deadline = life.ready_timeout ? static_cast<int>(life.ready_timeout->seconds()) : queued ? 12 * 3600 : 30 * 60;
    plan.steps.push_back(name_check_step(plan));
    plan.steps.push_back(queued ? queue_step(plan) : create_step(plan));
    plan.steps.push_back(release_step(plan));
    plan.steps.push_back(wait_step(plan, poll, deadline));
  } else if (plan.preemptible() || (plan.options.teardown && plan.options.form == PlanForm::full)) {
    // How to give an existing TPU back after a preemption (--teardown), and what to say when not.
    plan.steps.push_back(release_step(plan));
  }
  if (plan.options.form == PlanForm::full) {
    for (int slice = 0; slice < plan.target.nodes; ++slice) {
      plan.steps.push_back(preemption_check_step(plan, slice));
    }
  }
  return Ok{};
}

} // namespace tpulaunch::planning
