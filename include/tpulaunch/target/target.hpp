#pragma once
// Where a plan runs: the TPU resolved from the user's request (PlanOptions) and the catalog. The
// planner builds every gcloud call from it, the renderer shows it, verify counts its processes.
// Multislice (several nodes in one queued resource) is then a larger `nodes`, not a new shape.
#include <string>
#include <string_view>

#include "tpulaunch/catalog/catalog.hpp"
#include "tpulaunch/gcloud/gcloud.hpp"

namespace tpulaunch {

// Where the TPU comes from: one that exists already (the default), `tpu-vm create` (--create), or
// a queued resource (--queued).
enum class Capacity { existing, create, queued };
std::string_view to_string(Capacity capacity);

// How the TPU is provisioned (gcloud's create flags name it). spot and preemptible TPUs may be
// preempted; for an existing TPU --spot/--preemptible says that it is one, so a failed step asks
// for its state.
using Provisioning = gcloud::Provisioning;

// How ssh and scp reach the workers (external addresses today).
using Connection = gcloud::Connection;

// The most slices one plan asks for (--slices): a bound on the calls a plan emits, not gcloud's.
inline constexpr int k_max_slices = 64;

struct Target {
  std::string project; // empty: gcloud's configured one
  std::string zone;
  std::string tpu;             // the TPU VM (node) name
  std::string queued_resource; // the queued resource's ID (Capacity::queued only)
  const Slice* slice = nullptr; // the accelerator type of each node; nullptr on the CPU route
  Capacity capacity = Capacity::existing;
  Provisioning provisioning = Provisioning::standard;
  std::string runtime_version; // for create/queue: --runtime-version or the catalog's
  Connection connection = Connection::external;
  bool internal_ips = false; // create/queue workers without external addresses (--internal-ips)
  int nodes = 1; // TPU VM nodes of `slice`, each its own ICI domain (--slices; docs/multislice.md)
  // The mark of capacity the plan creates (--create, --queued): the metadata value tpulaunch_run
  // its create call sets, which every later step that touches the TPU checks first. Empty for an
  // existing TPU.
  std::string mark;

  [[nodiscard]] gcloud::Location location() const { return {zone, project}; }
  [[nodiscard]] bool queued() const { return capacity == Capacity::queued; }
  [[nodiscard]] bool multislice() const { return nodes > 1; }
  // The name of node `index`: the TPU itself on one slice, <tpu>-<index> with several (the names
  // queued-resources create --node-count=N --node-prefix=<tpu> gives).
  [[nodiscard]] std::string node(int index) const { return multislice() ? tpu + "-" + std::to_string(index) : tpu; }
  // Hosts of one node; 0 on the CPU route.
  [[nodiscard]] int hosts() const { return slice == nullptr ? 0 : slice->hosts; }
  // JAX processes of the whole run: one per host of every node.
  [[nodiscard]] int processes() const { return nodes * hosts(); }
  // TPU devices the whole run sees (jax.device_count()); 0 on the CPU route.
  [[nodiscard]] int devices() const { return slice == nullptr ? 0 : nodes * slice->device_count(); }
  // A TPU Google may preempt: a failed step then asks for its state once.
  [[nodiscard]] bool preemptible() const {
    return provisioning == Provisioning::spot || provisioning == Provisioning::preemptible;
  }
  // The name the capacity steps ask about: the queued resource's, or the TPU's.
  [[nodiscard]] const std::string& capacity_name() const { return queued() ? queued_resource : tpu; }
};

// A target that names only the slice: what verify knows of a run folder (no TPU is reached).
Target slice_target(const Slice& slice);

} // namespace tpulaunch
