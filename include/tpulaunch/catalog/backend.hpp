#pragma once
// Which backend can run on a slice: the Cloud TPU VM API (gcloud compute tpus tpu-vm, ssh to each
// worker) or GKE (a JobSet on a TPU slice node pool). The catalog holds the facts; the refusal is
// the backend's, so TPU7x is refused on the TPU-VM route with the reason and accepted on GKE.
#include <string_view>

#include "tpulaunch/catalog/catalog.hpp"
#include "tpulaunch/util/error.hpp"

namespace tpulaunch {

enum class Backend { tpu_vm, gke };
std::string_view to_string(Backend backend);

// Ok when `backend` can run on `slice`; otherwise a refused Error that names the slice and says
// why: the TPU VM API does not reach its generation ("the Cloud TPU API does not support TPU7x
// and later: use GKE"), or the catalog holds no GKE facts for it.
Status reaches(Backend backend, const Slice& slice, const Catalog& catalog);

// The slice `name` names (as Catalog::require takes it) if `backend` reaches it. For the TPU VM
// route, a name <generation id>-<n> of a generation that API does not reach ("tpu7x-12") is
// refused with the reason even when the catalog does not list it.
Result<const Slice*> require_slice_for(Backend backend, const Catalog& catalog, std::string_view name);

} // namespace tpulaunch
