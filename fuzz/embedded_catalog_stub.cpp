// Stands in for the generated catalog table in the fuzz build: no fuzz target reads the built-in
// catalog, and the fuzz build does not run the generator.
#include "tpulaunch/catalog/catalog.hpp"

namespace tpulaunch {

Result<Catalog> load_embedded_catalog() { return config_error("the fuzz build has no built-in catalog"); }

} // namespace tpulaunch
