#pragma once
// The topology figure: hosts, chips per host and global chips per slice as grouped bars (SVG),
// the course's figure of v5litepod-4/8/16 and v6e-16 generated from the catalog.
#include <string>
#include <vector>

#include "tpulaunch/catalog/catalog.hpp"

namespace tpulaunch {

// A standalone SVG document with labelled axes, a legend and one group of three bars per slice.
// Every bar carries data-slice, data-metric and data-value attributes and a value label.
std::string render_topology_svg(const std::vector<const Slice*>& slices);

} // namespace tpulaunch
