#include "tpulaunch/catalog/backend.hpp"

#include <fmt/format.h>

#include "tpulaunch/catalog/slice_names.hpp"
#include "tpulaunch/values/validate.hpp"

namespace tpulaunch {
namespace {

// Why the TPU-VM route refuses a generation outside the Cloud TPU VM API (TPU7x and later).
Error outside_tpu_vm_api(std::string_view slice, std::string_view generation) {
  return refused_error(fmt::format("slice '{}' is {}, which the Cloud TPU VM API (gcloud compute tpus tpu-vm) does not "
                                   "reach: the Cloud TPU API does not support TPU7x and later: use GKE (docs/gke.md)",
                                   printable(slice), printable(generation)));
}

// The generations the catalog holds GKE facts for, for the GKE route's refusal.
std::string gke_generations(const Catalog& catalog) {
  std::string list;
  for (const auto& generation : catalog.generations()) {
    if (!generation.gke_accelerator.empty()) {
      list += (list.empty() ? "" : ", ") + generation.id;
    }
  }
  return list.empty() ? std::string("none") : list;
}

} // namespace

std::string_view to_string(Backend backend) {
  return backend == Backend::tpu_vm ? "tpu-vm" : "gke";
}

Status reaches(Backend backend, const Slice& slice, const Catalog& catalog) {
  if (backend == Backend::tpu_vm && slice.api != GenerationApi::tpu_vm) {
    return outside_tpu_vm_api(slice.name, slice.generation);
  }
  if (backend == Backend::gke && !slice.on_gke()) {
    return refused_error(fmt::format("slice '{}' has no GKE facts in the catalog (accelerator label, machine type, "
                                     "nodes): the GKE route covers the slices of {} (docs/catalog.md)",
                                     printable(slice.name), gke_generations(catalog)));
  }
  return Ok{};
}

Result<const Slice*> require_slice_for(Backend backend, const Catalog& catalog, std::string_view name) {
  if (backend == Backend::tpu_vm) {
    const std::string canonical = canonical_slice_name(name);
    if (const auto dash = canonical.rfind('-'); dash != std::string::npos) {
      for (const auto& generation : catalog.generations()) {
        if (!generation.tpu_vm_api() && generation.id == canonical.substr(0, dash)) {
          return outside_tpu_vm_api(name, generation.id);
        }
      }
    }
  }
  TPULAUNCH_TRY(const Slice* slice, catalog.require(name));
  TPULAUNCH_CHECK(reaches(backend, *slice, catalog));
  return slice;
}

} // namespace tpulaunch
