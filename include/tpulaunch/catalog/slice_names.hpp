#pragma once
// Slice names as people type them: any letter case, and the generation names in use besides the
// catalog's accelerator types (v5e and v5lite for v5litepod, trillium for v6e, GKE's
// tpu-v5-lite-podslice ...). The catalog's own name is what reaches gcloud.
#include <span>
#include <string>
#include <string_view>

#include "tpulaunch/catalog/catalog.hpp"
#include "tpulaunch/util/error.hpp"

namespace tpulaunch {

// A name prefix people use for a generation, and the catalog's prefix for it.
struct GenerationAlias {
  std::string_view alias;  // "v5e"
  std::string_view prefix; // "v5litepod"
};

// Every alias, grouped by generation; docs/catalog.md lists the same table.
std::span<const GenerationAlias> generation_aliases();

// `typed` in lower case, with an alias before its last '-' replaced by the catalog's prefix:
// "V5E-16" -> "v5litepod-16", "trillium-8" -> "v6e-8". Unchanged otherwise (but lower case).
std::string canonical_slice_name(std::string_view typed);

// The name to look for suggestions under when `typed` names no slice: lower case, runs of spaces,
// '_', '.' and '-' as one '-' (none at the ends), an alias followed directly by digits split
// ("v5e16" -> "v5e-16"), then canonical_slice_name: "v5e 16" -> "v5litepod-16". It only ever
// picks a suggestion; no name is accepted through it.
std::string suggestion_key(std::string_view typed);

// The slice `typed` names, or a usage Error "unknown slice 'x' (did you mean 'y'?)" whose
// suggestion is the slice suggestion_key() names, else the nearest in the same generation, then
// in every slice.
Result<const Slice*> find_slice(const Catalog& catalog, std::string_view typed);

} // namespace tpulaunch
