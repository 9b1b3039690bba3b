#include "tpulaunch/plan/backend.hpp"

namespace tpulaunch {

int Topology::hosts(Backend backend) const {
  if (slice == nullptr) {
    return 0;
  }
  return backend == Backend::gke ? slice->gke_vms : slice->hosts;
}

int Topology::chips_per_host(Backend backend) const {
  if (slice == nullptr) {
    return 0;
  }
  return backend == Backend::gke ? slice->gke_chips_per_vm : slice->chips_per_host;
}

Backend backend_of(const Placement& placement) {
  return std::holds_alternative<GkePlacement>(placement) ? Backend::gke : Backend::tpu_vm;
}

Result<Plan> tpu_vm_plan(const ScriptStatus& script, RouteKind route, const Topology& topology, PlanOptions options) {
  if (topology.slices > 1 && !options.lifecycle.slices) {
    options.lifecycle.slices = topology.slices;
  }
  return build_plan(script, route, topology.slice, options);
}

} // namespace tpulaunch
