#include "tpulaunch/plan/backend.hpp"

#include "steps.hpp"
#include "tpulaunch/plan/request.hpp"

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

Result<Plan> tpu_vm_plan(const ScriptStatus& script, RouteKind route, const PlanRequest& request) {
  TPULAUNCH_CHECK(validate(request, script, route));
  return planning::build_tpu_vm_plan(script, route, request.topology, request.options);
}

Result<Plan> build_plan(const ScriptStatus& script, RouteKind route, const Slice* slice, const PlanOptions& options) {
  return tpu_vm_plan(script, route, PlanRequest{Topology{slice, 1}, TpuVmPlacement{}, options, {}, false});
}

} // namespace tpulaunch
