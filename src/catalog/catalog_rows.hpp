#pragma once
// The slice catalog as constant rows. tools/catalog_table.cpp parses catalog/slices.json at build
// time with parse_catalog (the parser `--catalog FILE` uses at run time) and writes these rows
// into a generated source, so a plan starts without parsing JSON. Internal to the core and the
// generator: everything else sees a Catalog.
#include <span>
#include <string>
#include <string_view>

#include "tpulaunch/catalog/catalog.hpp"

namespace tpulaunch {

struct GenerationRow {
  std::string_view id;
  bool name_counts_chips;
  int tensorcores_per_chip;
  GenerationApi api;
  TpuDevices devices;
  std::string_view gke_accelerator;
  std::string_view source;
};

struct SliceRow {
  std::string_view name;
  std::string_view generation;
  int hosts;
  int chips_per_host;
  int devices_per_host;
  int hbm_gib_per_chip;
  std::string_view runtime_version;
  std::string_view topology;
  GenerationApi api;
  TpuDevices devices;
  std::string_view gke_accelerator;
  std::string_view gke_machine_type;
  int gke_vms;
  int gke_chips_per_vm;
};

struct ZoneRow {
  std::string_view name;
  std::string_view offers; // generation ids and slice names, separated by one space
};

// The Catalog holding `generations`, `slices` and `zones` in the given order, named `origin`. The
// rows were validated when they were generated, so this cannot fail.
Catalog catalog_from_rows(std::span<const GenerationRow> generations, std::span<const SliceRow> slices,
                          std::span<const ZoneRow> zones, std::string origin);

// The name the built-in catalog goes by in messages and in `slices --format json`.
inline constexpr std::string_view k_embedded_catalog_origin = "<embedded catalog/slices.json>";

} // namespace tpulaunch
