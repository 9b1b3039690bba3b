#pragma once
// A plan request: what the command line asked for, parsed once at the edge into typed values that
// no backend rewrites (the run's Topology, its Placement, the PlanOptions, and the names of the
// flags given), and the one layer of rules between them. Both backends' entry points (tpu_vm_plan,
// gke::build_gke_plan) go through `validate`; the CLI maps flags to values, calls an entry point
// and prints.
#include <string>
#include <string_view>
#include <vector>

#include "tpulaunch/plan/backend.hpp"

namespace tpulaunch {

struct PlanRequest {
  Topology topology; // the slice count's one home: --slices N is topology.slices
  Placement placement = TpuVmPlacement{};
  PlanOptions options;
  // The flags the command line gave, by name ("--tpu", "--slices"): a rule that refuses a flag
  // names it as typed, and a value alone cannot tell `--slices 1` from no --slices.
  std::vector<std::string> given;
  bool manifest = false; // --format yaml or --manifest FILE: the GKE manifest is asked for

  [[nodiscard]] bool gave(std::string_view flag) const;
  [[nodiscard]] Backend backend() const { return backend_of(placement); }
};

// The flags that name one choice each (--create or --queued; one provisioning model; one way to
// connect): at most one of a group among `given`, else a usage Error in the group's words.
Status check_exclusive_flags(const std::vector<std::string>& given);

// The rules between options alone, which need no file: the CLI calls it before it reads the run
// record or the matrix, so that these refusals come first. `validate` repeats it.
Status validate_options(const PlanRequest& request);

// Every rule between the request's options for `script` on `route`, in the order a user meets them:
// the CPU route takes no option that only steers a TPU; a GKE route takes no TPU VM's placement,
// capacity, connection or --course, and needs --results; the TPU-VM route's --course form, names,
// capacity and --slices; on every route the interpreter and --env values. A usage Error naming
// the flags.
Status validate(const PlanRequest& request, const ScriptStatus& script, RouteKind route);

} // namespace tpulaunch
