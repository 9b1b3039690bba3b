#include "tpulaunch/target/target.hpp"

#include <fmt/format.h>

#include "steps.hpp"

namespace tpulaunch {

namespace planning {
namespace {

Status needs(bool ok, std::string_view message) {
  if (!ok) {
    return usage_error(std::string(message));
  }
  return Ok{};
}

// --slices N: N nodes of one queued resource (--queued), or N existing TPUs <tpu>-0 ... <tpu>-(N-1).
// tpu-vm create has no multi-node form, so --create is refused; gcloud itself refuses a count of 1
// and passes 0 to the API, so the count is checked here (docs/multislice.md §2.1).
Status resolve_slices(const PlanOptions& options, const Slice& slice, int slices) {
  const LifecycleOptions& life = options.lifecycle;
  if (slices == 1) {
    return Ok{};
  }
  if (slices < 2 || slices > k_max_slices) {
    return usage_error(fmt::format("--slices {}: expected 2 to {} slices (one slice is a plan without --slices)",
                                   slices, k_max_slices));
  }
  if (slice.generation == "v2" || slice.generation == "v3") {
    return usage_error(fmt::format("--slices with {}: Multislice needs TPU v4 or later (docs/multislice.md), and {} is "
                                   "a {} slice",
                                   slice.name, slice.name, slice.generation));
  }
  TPULAUNCH_CHECK(needs(life.capacity != Capacity::create,
                        "--slices with --create: tpu-vm create makes one node only; use --queued (one queued resource "
                        "with --node-count) or existing TPUs <tpu>-0 ... <tpu>-(N-1)"));
  TPULAUNCH_CHECK(needs(life.capacity == Capacity::queued || life.provisioning == Provisioning::standard,
                        "--slices on existing TPUs takes no --spot/--preemptible/--reserved: deleting what holds quota "
                        "is the queued resource's (--queued)"));
  TPULAUNCH_CHECK(needs(life.capacity == Capacity::queued || !options.teardown,
                        "--slices with --teardown needs --queued: the one queued resource is what is deleted"));
  const std::string last = fmt::format("{}-{}", options.tpu, slices - 1);
  if (!value_rule(ValueKind::tpu_name).accepts(last)) {
    return usage_error(fmt::format("--slices {}: the last node's name {} is not a valid TPU name ({}); choose a "
                                   "shorter --tpu",
                                   slices, last, value_rule(ValueKind::tpu_name).description));
  }
  return Ok{};
}

} // namespace

Result<Target> resolve_target(const PlanOptions& options, const Slice& slice, int slices) {
  const LifecycleOptions& life = options.lifecycle;
  const bool creates = life.capacity != Capacity::existing;
  TPULAUNCH_CHECK(needs(life.provisioning != Provisioning::preemptible || life.capacity != Capacity::queued,
                        "--preemptible is a tpu-vm create flag; a queued resource takes --spot"));
  TPULAUNCH_CHECK(needs(life.provisioning != Provisioning::guaranteed || life.capacity == Capacity::queued,
                        "--guaranteed is a queued-resources flag: it needs --queued"));
  TPULAUNCH_CHECK(needs(life.provisioning != Provisioning::reserved || creates,
                        "--reserved asks for reserved capacity: it needs --create or --queued"));
  TPULAUNCH_CHECK(needs(life.capacity == Capacity::queued || (life.queued_resource.empty() && !life.valid_until),
                        "--queued-resource and --valid-until-duration need --queued"));
  TPULAUNCH_CHECK(needs(creates || (life.runtime_version.empty() && !life.ready_timeout && !life.poll),
                        "--runtime-version, --ready-timeout and --poll need --create or --queued"));
  TPULAUNCH_CHECK(needs(creates || !life.internal_ips,
                        "--internal-ips asks for workers without external addresses when the TPU is made: it needs "
                        "--create or --queued (an existing TPU's addresses are what they are)"));
  TPULAUNCH_CHECK(resolve_slices(options, slice, slices));
  Target target;
  target.nodes = slices;
  target.project = options.project;
  target.zone = options.zone;
  target.tpu = options.tpu;
  target.slice = &slice;
  target.capacity = life.capacity;
  target.provisioning = life.provisioning;
  target.connection = options.connection;
  target.internal_ips = life.internal_ips;
  target.runtime_version = life.runtime_version.empty() ? slice.runtime_version : life.runtime_version;
  TPULAUNCH_CHECK(validate_value(ValueKind::runtime_version, target.runtime_version));
  if (target.queued()) {
    target.queued_resource = life.queued_resource.empty() ? options.tpu + "-qr" : life.queued_resource;
    TPULAUNCH_CHECK(validate_value(ValueKind::queued_resource, target.queued_resource));
  }
  return target;
}

} // namespace planning
} // namespace tpulaunch
