#include "tpulaunch/target/target.hpp"

namespace tpulaunch {

std::string_view to_string(Capacity capacity) {
  switch (capacity) {
  case Capacity::existing: return "existing";
  case Capacity::create: return "create";
  case Capacity::queued: return "queued";
  }
  return "existing";
}

Target slice_target(const Slice& slice) {
  Target target;
  target.slice = &slice;
  return target;
}

} // namespace tpulaunch
