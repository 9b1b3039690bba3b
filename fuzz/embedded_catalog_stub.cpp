// Stands in for the generated embedded catalog in the fuzz build: no fuzz target reads it, and
// the fuzz build does not run the embedding step.
#include "tpulaunch/catalog.hpp"

namespace tpulaunch {

std::string_view embedded_catalog_json() { return "{}"; }

} // namespace tpulaunch
