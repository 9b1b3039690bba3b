#pragma once
// The slice catalog: every public TPU accelerator type with its stored figures (hosts, chips and
// JAX devices per host, HBM per chip, runtime version, and where GKE reaches it, its node pool's
// machine type and VMs). Everything else (global chips, total HBM, multi-host, JAX device counts,
// chips per GKE node) is derived here and never stored. Which backend may plan for a slice is
// not decided here: backend.hpp says.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tpulaunch/util/error.hpp"

namespace tpulaunch {

// Which API provisions a generation: the Cloud TPU VM API (`gcloud compute tpus tpu-vm`, what
// tpulaunch plans for), or only Compute Engine or GKE (TPU7x and later).
enum class GenerationApi { tpu_vm, compute_engine_or_gke };
std::string_view to_string(GenerationApi api);

// The TPU device files a worker of the generation exposes: /dev/accel* (v4 and older) or
// /dev/vfio/* (v5e, v5p, v6e); `any` when the catalog does not say (then both are checked).
enum class TpuDevices { any, accel, vfio };
std::string_view to_string(TpuDevices devices);

struct Generation {
  std::string id;                      // "v5e"
  bool name_counts_chips = false;      // v5e/v6e names count chips; v2/v3/v4/v5p count TensorCores
  int tensorcores_per_chip = 1;
  GenerationApi api = GenerationApi::tpu_vm; // "api" in the catalog; absent: tpu-vm
  TpuDevices devices = TpuDevices::any;      // "devices" in the catalog
  std::string gke_accelerator; // GKE's node label cloud.google.com/gke-tpu-accelerator; "" if none
  std::string source;                  // where the figures come from

  [[nodiscard]] bool tpu_vm_api() const { return api == GenerationApi::tpu_vm; }
};

struct Slice {
  std::string name;            // accelerator type, e.g. "v5litepod-16"
  std::string generation;      // "v5e"
  int hosts = 1;               // TPU VMs; gcloud --worker indices run 0..hosts-1
  int chips_per_host = 1;
  int devices_per_host = 1;    // jax.local_device_count() after jax.distributed.initialize()
  int hbm_gib_per_chip = 0;
  std::string runtime_version; // for `gcloud compute tpus tpu-vm create --version=`; "" outside that API
  std::string topology;        // e.g. "4x4"; also GKE's cloud.google.com/gke-tpu-topology value
  GenerationApi api = GenerationApi::tpu_vm; // its generation's, copied when the catalog is parsed
  TpuDevices devices = TpuDevices::any;      // likewise
  // GKE: a TPU slice node pool of `gke_vms` nodes of `gke_machine_type`, each with
  // `gke_chips_per_vm` chips (the machine type's "-<N>t"). Empty and 0 when the catalog holds no
  // GKE facts for the slice. An 8-chip v5e/v6e slice is 1 VM here (hosts) but 2 nodes of a -4t
  // machine type on GKE, so these are stored apart from hosts.
  std::string gke_accelerator;  // its generation's, copied when the catalog is parsed
  std::string gke_machine_type; // "ct5lp-hightpu-4t"
  int gke_vms = 0;
  int gke_chips_per_vm = 0;

  [[nodiscard]] int global_chips() const { return hosts * chips_per_host; }
  [[nodiscard]] long long total_hbm_gib() const { return static_cast<long long>(global_chips()) * hbm_gib_per_chip; }
  [[nodiscard]] bool multi_host() const { return hosts > 1; }
  [[nodiscard]] int local_device_count() const { return devices_per_host; }
  [[nodiscard]] int device_count() const { return hosts * devices_per_host; }
  // Chips that never get a process when only worker 0 is started.
  [[nodiscard]] int idle_chips_on_worker_zero() const { return global_chips() - chips_per_host; }
  // Whether the catalog holds GKE facts for it (accelerator label, machine type, nodes).
  [[nodiscard]] bool on_gke() const { return gke_vms > 0; }
  // jax.local_device_count() in one pod on GKE: the generation's devices per chip times the
  // node's chips.
  [[nodiscard]] int gke_devices_per_vm() const { return devices_per_host / chips_per_host * gke_chips_per_vm; }
};

// A zone where Cloud TPU VMs can be created, and what it offers: generation ids (every slice of
// the generation) and slice names (that slice only), as Google's "TPU regions and zones" page
// lists them (docs/catalog.md). Only ever grounds for a warning: zones change faster than a
// catalog, and gcloud is the judge.
struct Zone {
  std::string name;                // "us-west4-a"
  std::vector<std::string> offers; // "v5e", "v2-8", ...
};

class Catalog {
public:
  Catalog(std::vector<Generation> generations, std::vector<Slice> slices, std::string origin,
          std::vector<Zone> zones = {});

  [[nodiscard]] const std::vector<Slice>& slices() const { return m_slices; }
  [[nodiscard]] const std::vector<Generation>& generations() const { return m_generations; }
  [[nodiscard]] const std::string& origin() const { return m_origin; }
  [[nodiscard]] const std::vector<Zone>& zones() const { return m_zones; } // in file order

  // The slice named `name` (exact, lower case), or nullptr.
  [[nodiscard]] const Slice* find(std::string_view name) const;
  [[nodiscard]] const Generation* generation(std::string_view id) const;
  // The slice named `name` in any letter case or by a generation alias (slice_names.hpp), or a
  // usage Error "unknown slice 'x' (did you mean 'y'?)". Any listed slice, whichever API reaches
  // it: a backend refuses what it cannot run with require_slice_for (backend.hpp).
  [[nodiscard]] Result<const Slice*> require(std::string_view name) const;

  // The zone named `name`, or nullptr.
  [[nodiscard]] const Zone* zone(std::string_view name) const;
  // The zones that offer `slice` (its name or its generation), in table order.
  [[nodiscard]] std::vector<std::string> zones_offering(const Slice& slice) const;
  // A warning, in words, when the zone table knows better than `zone` for `slice`: the zone is
  // not in the table (with the nearest name), or it does not offer the slice (with the zones that
  // do). nullopt when all agrees, and when the catalog has no zone table (a --catalog without
  // "zones"). Never an error: gcloud decides.
  [[nodiscard]] std::optional<std::string> zone_warning(std::string_view zone, const Slice& slice) const;

private:
  std::vector<Generation> m_generations;
  std::vector<Slice> m_slices;
  std::string m_origin;
  std::vector<Zone> m_zones;
};

// Parses catalog JSON. Every problem (bad JSON, a missing or mistyped field, a duplicate slice,
// hosts < 1, a name whose number disagrees with its chips, a name or runtime version gcloud would
// not take, a runtime version missing for a TPU VM API generation or given for another one, GKE
// facts that disagree with the chips or a label value Kubernetes would not take, a zone name
// outside the zone rule or offering what the catalog does not list) is a config Error naming
// `origin` and the position or the slice.
Result<Catalog> parse_catalog(std::string_view json, std::string_view origin);

// The catalog built into the binary: a constant table generated from catalog/slices.json at build
// time by parse_catalog (a malformed file fails the build), so no JSON is parsed here. Its origin
// is "<embedded catalog/slices.json>". Never fails; Result keeps it interchangeable with
// load_catalog_file.
Result<Catalog> load_embedded_catalog();

// Reads and parses the catalog at `path`.
Result<Catalog> load_catalog_file(const std::string& path);

} // namespace tpulaunch
