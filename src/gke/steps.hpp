#pragma once
// The GKE plan's steps (steps.cpp) and its pieces the renderers share.
#include "tpulaunch/gke/plan.hpp"

namespace tpulaunch::gke {

// The digest of the pod program (src/remote/gke_pod.bash) the ConfigMap carries.
const std::string& pod_program_sha256();

// Appends the steps of `plan` (its manifest, run folder and names set): credentials, name check,
// write, apply, wait, one log fetch per pod, collect, verify, and teardown with --teardown.
void add_gke_steps(GkePlan& plan);

// The manifest's file in the run folder: what the write step writes and the apply step applies.
std::string manifest_file(const GkePlan& plan);

// The label selector of one pod: the JobSet, its replicated job's index (the slice) and the
// Job's completion index (the worker).
std::string pod_selector(const GkePlan& plan, int slice, int worker);

} // namespace tpulaunch::gke
