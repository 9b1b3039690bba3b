// The GKE plan's steps: argv data with their conditions (StepWhen), concurrency (StepGroup) and
// failure (OnFailure, FailureExit) as data, the same Step type the TPU-VM backend emits.
#include "gke/steps.hpp"

#include <fmt/format.h>

#include "tpulaunch/embedded/gke_verify_bash.hpp"
#include "tpulaunch/gcloud/gcloud.hpp"
#include "tpulaunch/util/exit_code.hpp"

namespace tpulaunch::gke {
namespace {

Word flag(std::string_view name, std::string value) {
  return Word(std::string(name) + "=").append(std::move(value));
}

ShellLine kubectl(const GkePlan& plan, std::initializer_list<Word> words) {
  ShellLine line{"kubectl"};
  for (const Word& word : words) {
    line.word(word);
  }
  line.word(flag("--namespace", plan.placement.name_space));
  return line;
}

// A step that stops the script when it fails, saying which step failed (the builders of steps
// whose failure means more say that instead).
Step make(StepKind kind, std::string summary, ShellLine line) {
  Step step;
  step.kind = kind;
  step.failure_exit =
      FailureExit{fmt::format("the {} step failed: {}", to_string(kind), summary), to_int(ExitCode::failure)};
  step.summary = std::move(summary);
  step.line = std::move(line);
  return step;
}

// How a user looks at the JobSet a failure keeps.
std::string kept(const GkePlan& plan) {
  return fmt::format("kubectl get jobset {} --namespace={}", plan.jobset, plan.placement.name_space);
}

Step credentials_step(const GkePlan& plan) {
  return make(
      StepKind::prepare,
      fmt::format("get the credentials of cluster {} ({}) for kubectl", plan.placement.cluster,
                  plan.placement.location),
      gcloud::container_get_credentials({plan.placement.cluster, plan.placement.location, plan.placement.project}));
}

// No JobSet of the plan's name may exist: the name holds the plan id, so one that exists is this
// run started before (or someone else's), and applying would change it.
Step name_check_step(const GkePlan& plan) {
  ShellLine line;
  line.code(Code("test -z \"$("))
      .line(kubectl(plan, {"get", "jobset", Word(plan.jobset), "--ignore-not-found", "--output=name"}))
      .code(Code(")\""));
  Step step =
      make(StepKind::name_check,
           fmt::format("check that no JobSet {} exists in namespace {}", plan.jobset, plan.placement.name_space),
           std::move(line));
  step.failure_exit = FailureExit{fmt::format("a JobSet {} exists already in namespace {} (this run started before, "
                                              "or another's): nothing was applied; a new --run-id makes a new plan",
                                              plan.jobset, plan.placement.name_space),
                                  to_int(PipelineStatus::name_taken)};
  return step;
}

// The manifest (a v1 List: the ConfigMap, then the JobSet) into the run folder as manifest.json,
// the very bytes --manifest FILE writes, so the document applied is the one a user reviews.
Step write_step(const GkePlan& plan) {
  ShellLine line{"mkdir", "-p", Word(plan.local_run_dir)};
  line.code(Code(" && "))
      .word("printf")
      .word("%s\\n")
      .word(Word(plan.manifest.dump(2)))
      .code(Code(" >"))
      .word(Word(manifest_file(plan)));
  return make(StepKind::write,
              fmt::format("write the manifest (the ConfigMap {} with the pod program and {} staged file(s), each "
                          "pinned by its digest; the JobSet {}) to {}",
                          plan.config_map, plan.staged.size(), plan.jobset, manifest_file(plan)),
              std::move(line));
}

// kubectl applies a List's items in order: the ConfigMap first, so the JobSet's pods find it.
Step apply_step(const GkePlan& plan) {
  return make(StepKind::stage,
              fmt::format("create the ConfigMap and the JobSet: {} slice(s) x {} pod(s), each pod checks the staged "
                          "files' digests and runs the script",
                          plan.topology.slices, plan.pods_per_slice()),
              ShellLine{"kubectl", "apply", flag("--filename", manifest_file(plan))});
}

// Until the JobSet has a terminal state (Completed or Failed), at most plan.wait_seconds; then
// the state and every pod's slice, worker, phase and exit code, into the run folder.
Step wait_step(const GkePlan& plan) {
  ShellLine line = kubectl(plan, {"wait", "--for=jsonpath={.status.terminalState}", Word("jobset/" + plan.jobset),
                                  flag("--timeout", std::to_string(plan.wait_seconds) + "s")});
  line.code(Code(" && "))
      .line(kubectl(plan, {"get", "jobset", Word(plan.jobset), "--output=jsonpath={.status.terminalState}"}))
      .code(Code(" >"))
      .word(Word(plan.local_run_dir + "/jobset-state"));
  line.code(Code(" && "))
      .line(kubectl(plan, {"get", "pods", flag("--selector", "jobset.sigs.k8s.io/jobset-name=" + plan.jobset),
                           "--output=jsonpath={range .items[*]}"
                           "{.metadata.labels.jobset\\.sigs\\.k8s\\.io/job-index} "
                           "{.metadata.labels.batch\\.kubernetes\\.io/job-completion-index} {.status.phase} "
                           "{.status.containerStatuses[0].state.terminated.exitCode}{\"\\n\"}{end}"}))
      .code(Code(" >"))
      .word(Word(plan.local_run_dir + "/pods.txt"));
  Step step = make(StepKind::wait,
                   fmt::format("wait for the JobSet to end (Completed or Failed), at most {}s; keep its state and "
                               "each pod's",
                               plan.wait_seconds),
                   std::move(line));
  step.poll = Poll{"Completed", {"Failed"}, 0, plan.wait_seconds};
  step.failure_exit = FailureExit{fmt::format("the JobSet {} did not end within {}s (or its state could not be read); "
                                              "it is kept: {}",
                                              plan.jobset, plan.wait_seconds, kept(plan)),
                                  to_int(ExitCode::failure)};
  return step;
}

// One pod's log into slice-<s>/worker-<i>/pod.log, whatever the JobSet's state: kubectl logs
// --follow (a pod still ending is read to its end), or, when the pod is gone (Kubernetes deletes
// a failed Job's other pods, and their logs with them), the log.txt its pod program uploaded.
// gke_log (src/remote/gke_log.bash) runs the one, then the other.
Step log_step(const GkePlan& plan, int slice, int worker) {
  const std::string folder = fmt::format("{}/slice-{}/worker-{}", plan.local_run_dir, slice, worker);
  ShellLine line{"gke_log", Word(folder)};
  line.line(kubectl(plan, {"logs", flag("--selector", pod_selector(plan, slice, worker)), "--tail=-1", "--follow"}))
      .word("--or")
      .line(gcloud::storage_cp(
          {fmt::format("{}/slice-{}/worker-{}/log.txt", plan.results_run_url, slice, worker), folder + "/pod.log"}));
  Step step = make(StepKind::fetch,
                   fmt::format("the log of slice {} worker {} (from the bucket if the pod is gone)", slice, worker),
                   std::move(line));
  step.where = StepWhere::remote;
  step.slice = slice;
  step.workers = Workers::one(worker);
  // Every pod's log, whatever the others did: a log that cannot be read is named after the last.
  step.group = StepGroup::fetch;
  step.on_failure = OnFailure::report_after_all;
  step.failure_exit.reset();
  return step;
}

Step collect_step(const GkePlan& plan) {
  const std::string parent = plan.local_run_dir.substr(0, plan.local_run_dir.rfind('/') + 1);
  Step step = make(StepKind::collect, "bring every pod's run folder back from the results bucket, in one call",
                   gcloud::storage_cp({plan.results_run_url, parent, true}));
  step.where = StepWhere::remote;
  return step;
}

Step verify_step(const GkePlan& plan) {
  ShellLine line{"bash",
                 "-c",
                 Word(std::string(embedded::gke_verify_bash)),
                 "gke-verify",
                 Word(plan.local_run_dir),
                 Word(plan.plan_sha256),
                 Word(std::to_string(plan.topology.slices)),
                 Word(std::to_string(plan.pods_per_slice())),
                 Word(plan.jobset),
                 Word(plan.placement.name_space)};
  Step step = make(StepKind::verify,
                   "check every pod's log and record (this plan's digest, status 0); a failed pod is named by slice "
                   "and worker, and the JobSet is kept",
                   std::move(line));
  step.failure_exit = FailureExit{
      fmt::format("the run did not verify (above); the JobSet {} is kept for inspection: {}", plan.jobset, kept(plan)),
      to_int(ExitCode::refused)};
  return step;
}

Step teardown_step(const GkePlan& plan) {
  Step step = make(StepKind::teardown, "delete the JobSet (its pods) and the ConfigMap, after verify",
                   kubectl(plan, {"delete", Word("jobset/" + plan.jobset), Word("configmap/" + plan.config_map)}));
  step.when = StepWhen::verify_succeeded;
  return step;
}

} // namespace

std::string manifest_file(const GkePlan& plan) {
  return plan.local_run_dir + "/manifest.json";
}

std::string pod_selector(const GkePlan& plan, int slice, int worker) {
  return fmt::format("jobset.sigs.k8s.io/jobset-name={},jobset.sigs.k8s.io/job-index={},"
                     "batch.kubernetes.io/job-completion-index={}",
                     plan.jobset, slice, worker);
}

void add_gke_steps(GkePlan& plan) {
  plan.steps.push_back(credentials_step(plan));
  plan.steps.push_back(name_check_step(plan));
  plan.steps.push_back(write_step(plan));
  plan.steps.push_back(apply_step(plan));
  plan.steps.push_back(wait_step(plan));
  for (int slice = 0; slice < plan.topology.slices; ++slice) {
    for (int worker = 0; worker < plan.pods_per_slice(); ++worker) {
      plan.steps.push_back(log_step(plan, slice, worker));
    }
  }
  plan.steps.push_back(collect_step(plan));
  plan.steps.push_back(verify_step(plan));
  if (plan.options.teardown) {
    plan.steps.push_back(teardown_step(plan));
  }
}

} // namespace tpulaunch::gke
