#pragma once
// Shared by the unit tests: the built-in catalog, loaded once per test binary.
#include <cstdio>
#include <cstdlib>

#include "tpulaunch/catalog/catalog.hpp"

namespace tpulaunch::test_support {

// The catalog load_embedded_catalog returns. If it cannot be loaded, every test that uses it
// would be meaningless, so the test binary stops with the reason.
inline const Catalog& embedded_catalog() {
  static const Catalog catalog = [] {
    auto result = load_embedded_catalog();
    if (!result) {
      std::fprintf(stderr, "the built-in catalog does not load: %s\n", result.error().message.c_str());
      std::abort();
    }
    return std::move(result).value();
  }();
  return catalog;
}

} // namespace tpulaunch::test_support
