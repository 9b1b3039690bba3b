#pragma once
// Invariant checks for the fuzz targets: a broken invariant aborts, and libFuzzer saves the input.
#include <cstdio>
#include <cstdlib>

#define TPULAUNCH_FUZZ_CHECK(condition)                                                       \
  do {                                                                                        \
    if (!(condition)) {                                                                       \
      std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (false)
