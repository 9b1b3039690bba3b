#include "tpulaunch/target/target.hpp"

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

} // namespace

Result<Target> resolve_target(const PlanOptions& options, const Slice& slice) {
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
  Target target;
  target.project = options.project;
  target.zone = options.zone;
  target.tpu = options.tpu;
  target.slice = &slice;
  target.capacity = life.capacity;
  target.provisioning = life.provisioning;
  target.connection = options.connection;
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
