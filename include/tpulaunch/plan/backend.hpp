#pragma once
// The seam between a run and the transport that carries it. A run's topology (slice type x
// slices: hosts, chips, devices) is what routing and classification see; its placement (TPU VM
// nodes or a queued resource, or a GKE cluster, location and namespace) is where it goes. Each
// backend turns a PlanRequest (request.hpp: topology, placement, options), validated by the one
// `validate`, into steps: the TPU-VM backend is `tpu_vm_plan`; the GKE backend is
// gke::build_gke_plan (gke/plan.hpp).
// Both emit `Step`s whose failure and concurrency behaviour is data (StepWhen, concurrent_group).
#include <optional>
#include <string>
#include <variant>

#include "tpulaunch/catalog/backend.hpp"
#include "tpulaunch/plan/plan.hpp"

namespace tpulaunch {

// What a run is, independent of where: `slices` copies of `slice`, each its own ICI domain.
struct Topology {
  const Slice* slice = nullptr; // nullptr: the CPU route
  int slices = 1;

  // Hosts (VMs, pods) of one slice on `backend`: an 8-chip v5e/v6e slice is 1 TPU VM but 2 GKE
  // nodes of a -4t machine type.
  [[nodiscard]] int hosts(Backend backend) const;
  // Chips of one host on `backend`.
  [[nodiscard]] int chips_per_host(Backend backend) const;
  // JAX processes of the whole run: hosts of every slice.
  [[nodiscard]] int processes(Backend backend) const { return slices * hosts(backend); }
  // TPU devices the whole run sees (jax.device_count()); 0 on the CPU route.
  [[nodiscard]] int devices() const { return slice == nullptr ? 0 : slices * slice->device_count(); }
};

// The TPU-VM placement: the TPU, zone, project and capacity of PlanOptions (kept there, where
// the planner reads them, so that no golden byte moves).
struct TpuVmPlacement {};

// The GKE placement: a cluster (gcloud container clusters get-credentials NAME --location LOC),
// the namespace the run's objects go in, and the container image every pod runs.
struct GkePlacement {
  std::string cluster;
  std::string location;
  std::string project;                // empty: gcloud's configured one
  std::string name_space = "default"; // --namespace
  std::string image;                  // --image: must hold bash, python with jax[tpu], and gcloud
};

using Placement = std::variant<TpuVmPlacement, GkePlacement>;

Backend backend_of(const Placement& placement);

struct PlanRequest; // request.hpp

// The TPU-VM backend: the request validated (request.hpp), then its steps. Its topology's slice
// count is the node count; nothing of the request is rewritten.
Result<Plan> tpu_vm_plan(const ScriptStatus& script, RouteKind route, const PlanRequest& request);

} // namespace tpulaunch
