#include "tpulaunch/catalog/catalog.hpp"

#include <gtest/gtest.h>

#include "support/test_catalog.hpp"

namespace tpulaunch {
namespace {

const Catalog& embedded() { return test_support::embedded_catalog(); }

std::string catalog_with_slice(const std::string& slice_json) {
  return R"({"version": 1, "generations": {"v5e": {"name_counts": "chips", "tensorcores_per_chip": 1}},
             "slices": [)" + slice_json + "]}";
}

std::string error_of(const std::string& json) {
  auto result = parse_catalog(json, "test.json");
  EXPECT_FALSE(result.ok());
  return result.ok() ? std::string() : result.error().message;
}

// The built-in table is generated from catalog/slices.json at build time; it must hold exactly
// what parsing the file at run time (`--catalog`) gives, field by field and in the same order.
TEST(Catalog, BuiltInTableEqualsTheFileParsedAtRunTime) {
  auto file = load_catalog_file(std::string(TPULAUNCH_SOURCE_DIR) + "/catalog/slices.json");
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(embedded().origin(), "<embedded catalog/slices.json>");
  ASSERT_EQ(embedded().generations().size(), file->generations().size());
  for (std::size_t i = 0; i < file->generations().size(); ++i) {
    const Generation& built = embedded().generations()[i];
    const Generation& parsed = file->generations()[i];
    EXPECT_EQ(built.id, parsed.id);
    EXPECT_EQ(built.name_counts_chips, parsed.name_counts_chips) << parsed.id;
    EXPECT_EQ(built.tensorcores_per_chip, parsed.tensorcores_per_chip) << parsed.id;
    EXPECT_EQ(built.gke_accelerator, parsed.gke_accelerator) << parsed.id;
    EXPECT_EQ(built.source, parsed.source) << parsed.id;
  }
  ASSERT_EQ(embedded().slices().size(), file->slices().size());
  for (std::size_t i = 0; i < file->slices().size(); ++i) {
    const Slice& built = embedded().slices()[i];
    const Slice& parsed = file->slices()[i];
    EXPECT_EQ(built.name, parsed.name);
    EXPECT_EQ(built.generation, parsed.generation) << parsed.name;
    EXPECT_EQ(built.hosts, parsed.hosts) << parsed.name;
    EXPECT_EQ(built.chips_per_host, parsed.chips_per_host) << parsed.name;
    EXPECT_EQ(built.devices_per_host, parsed.devices_per_host) << parsed.name;
    EXPECT_EQ(built.hbm_gib_per_chip, parsed.hbm_gib_per_chip) << parsed.name;
    EXPECT_EQ(built.runtime_version, parsed.runtime_version) << parsed.name;
    EXPECT_EQ(built.topology, parsed.topology) << parsed.name;
    EXPECT_EQ(built.api, parsed.api) << parsed.name;
    EXPECT_EQ(built.gke_accelerator, parsed.gke_accelerator) << parsed.name;
    EXPECT_EQ(built.gke_machine_type, parsed.gke_machine_type) << parsed.name;
    EXPECT_EQ(built.gke_vms, parsed.gke_vms) << parsed.name;
    EXPECT_EQ(built.gke_chips_per_vm, parsed.gke_chips_per_vm) << parsed.name;
  }
  ASSERT_EQ(embedded().zones().size(), file->zones().size());
  for (std::size_t i = 0; i < file->zones().size(); ++i) {
    EXPECT_EQ(embedded().zones()[i].name, file->zones()[i].name);
    EXPECT_EQ(embedded().zones()[i].offers, file->zones()[i].offers) << file->zones()[i].name;
  }
}

TEST(Catalog, ZoneTableWarnsAndNeverDecides) {
  const Slice& v5e16 = *embedded().find("v5litepod-16");
  EXPECT_FALSE(embedded().zone_warning("us-west4-a", v5e16)) << "the course's zone offers v5e";
  EXPECT_FALSE(embedded().zone_warning("", v5e16)) << "no --zone: gcloud's default, nothing to compare";
  const auto unknown = embedded().zone_warning("us-west4-b", v5e16);
  ASSERT_TRUE(unknown.has_value());
  EXPECT_NE(unknown->find("zone 'us-west4-b' is not in the catalog's table of Cloud TPU zones (did you mean "
                          "'us-west4-a'?)"),
            std::string::npos)
      << *unknown;
  const auto elsewhere = embedded().zone_warning("us-east1-d", v5e16);
  ASSERT_TRUE(elsewhere.has_value());
  EXPECT_NE(elsewhere->find("v5litepod-16 is not offered in us-east1-d"), std::string::npos) << *elsewhere;
  EXPECT_NE(elsewhere->find("it lists v5litepod-16 in us-central1-a, us-south1-a, us-west1-c, us-west4-a, "
                            "europe-west4-b"),
            std::string::npos)
      << *elsewhere;
  // A slice name in the table offers that slice only: v2-8 in us-central1-b, not v2-32.
  EXPECT_FALSE(embedded().zone_warning("us-central1-b", *embedded().find("v2-8")));
  EXPECT_TRUE(embedded().zone_warning("us-central1-b", *embedded().find("v2-32")));
  EXPECT_EQ(embedded().zones_offering(*embedded().find("v2-32")), (std::vector<std::string>{"us-central1-a",
                                                                                          "europe-west4-a"}));
  // A catalog without a zone table has nothing to say.
  auto bare = parse_catalog(catalog_with_slice(
      R"({"name": "v5litepod-4", "generation": "v5e", "hosts": 1, "chips_per_host": 4, "devices_per_host": 4, "hbm_gib_per_chip": 16, "runtime_version": "x"})"),
      "test.json");
  ASSERT_TRUE(bare.ok()) << bare.error().message;
  EXPECT_FALSE(bare->zone_warning("mars-central1-a", bare->slices().front()));
}

TEST(Catalog, ZoneTableEntriesAreChecked) {
  const std::string slice =
      R"({"name": "v5litepod-4", "generation": "v5e", "hosts": 1, "chips_per_host": 4, "devices_per_host": 4, "hbm_gib_per_chip": 16, "runtime_version": "x"})";
  const auto with_zones = [&](const std::string& zones) {
    return R"({"version": 1, "generations": {"v5e": {"name_counts": "chips", "tensorcores_per_chip": 1}},
               "slices": [)" + slice + "],\n \"zones\": " + zones + "}";
  };
  auto good = parse_catalog(with_zones(R"({"us-west4-a": ["v5e"], "us-west1-c": ["v5litepod-4"]})"), "t.json");
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_EQ(good->zones().size(), 2U);
  auto message = error_of(with_zones(R"({"US West": ["v5e"]})"));
  EXPECT_NE(message.find("zone \"US West\" is not a zone name"), std::string::npos) << message;
  EXPECT_EQ(message.rfind("test.json:3:", 0), 0U) << message;
  message = error_of(with_zones(R"({"us-west4-a": ["v5e", "v9-8"]})"));
  EXPECT_NE(message.find("zone 'us-west4-a': \"v9-8\" is neither a generation nor a slice of this catalog"),
            std::string::npos)
      << message;
  message = error_of(with_zones(R"({"us-west4-a": []})"));
  EXPECT_NE(message.find("must list what it offers"), std::string::npos) << message;
}

TEST(Catalog, CourseRowsHaveTheCourseFigures) {
  struct Row {
    const char* name;
    int hosts, chips_per_host, global_chips, hbm_per_chip;
    long long total_hbm;
  };
  for (const Row& row : {Row{"v5litepod-4", 1, 4, 4, 16, 64}, Row{"v5litepod-8", 1, 8, 8, 16, 128},
                         Row{"v5litepod-16", 4, 4, 16, 16, 256}, Row{"v6e-16", 4, 4, 16, 32, 512}}) {
    const Slice* s = embedded().find(row.name);
    ASSERT_NE(s, nullptr) << row.name;
    EXPECT_EQ(s->hosts, row.hosts) << row.name;
    EXPECT_EQ(s->chips_per_host, row.chips_per_host) << row.name;
    EXPECT_EQ(s->global_chips(), row.global_chips) << row.name;
    EXPECT_EQ(s->hbm_gib_per_chip, row.hbm_per_chip) << row.name;
    EXPECT_EQ(s->total_hbm_gib(), row.total_hbm) << row.name;
  }
}

TEST(Catalog, DerivesJaxDeviceCounts) {
  const Slice* pod = embedded().find("v5litepod-16");
  ASSERT_NE(pod, nullptr);
  EXPECT_TRUE(pod->multi_host());
  EXPECT_EQ(pod->local_device_count(), 4);
  EXPECT_EQ(pod->device_count(), 16);
  EXPECT_EQ(pod->idle_chips_on_worker_zero(), 12);
  // v2/v3 show one JAX device per TensorCore: 8 per host.
  const Slice* v2 = embedded().find("v2-32");
  ASSERT_NE(v2, nullptr);
  EXPECT_EQ(v2->hosts, 4);
  EXPECT_EQ(v2->local_device_count(), 8);
  EXPECT_EQ(v2->device_count(), 32);
}

TEST(Catalog, CoversEveryGenerationsSingleHostTypesAndLargestPublicSlice) {
  for (const char* name : {"v2-8", "v3-8", "v4-8", "v5p-8", "v5litepod-1", "v5litepod-4", "v5litepod-8", "v6e-1",
                           "v6e-4", "v6e-8"}) {
    const Slice* s = embedded().find(name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_FALSE(s->multi_host()) << name;
  }
  // The largest accelerator type of each generation on its public page (docs/catalog.md), and
  // nothing past it: no row of a generation has more chips.
  struct Largest {
    const char* name;
    int chips;
  };
  for (const Largest& largest : {Largest{"v2-512", 256}, Largest{"v3-2048", 1024}, Largest{"v4-4096", 2048},
                                 Largest{"v5p-12288", 6144}, Largest{"v5litepod-256", 256}, Largest{"v6e-256", 256},
                                 Largest{"tpu7x-18432", 9216}}) {
    const Slice* s = embedded().find(largest.name);
    ASSERT_NE(s, nullptr) << largest.name;
    EXPECT_EQ(s->global_chips(), largest.chips) << largest.name;
    for (const auto& other : embedded().slices()) {
      if (other.generation == s->generation) {
        EXPECT_LE(other.global_chips(), largest.chips) << other.name;
      }
    }
  }
}

// The large slices with the figures of their generation's page: hosts are the TPU VMs that
// --worker=all reaches (4 chips each), devices are what JAX shows, HBM is per chip.
TEST(Catalog, LargeSlicesHaveTheirPagesFigures) {
  struct Row {
    const char* name;
    const char* topology;
    int hosts, chips_per_host, global_chips, local_devices, devices, hbm_per_chip;
    long long total_hbm;
  };
  for (const Row& row : {Row{"v3-2048", "32x32", 256, 4, 1024, 8, 2048, 32, 32768},
                         Row{"v4-4096", "8x16x16", 512, 4, 2048, 4, 2048, 32, 65536},
                         Row{"v5p-12288", "16x16x24", 1536, 4, 6144, 4, 6144, 95, 583680},
                         Row{"v6e-256", "16x16", 64, 4, 256, 4, 256, 32, 8192}}) {
    const Slice* s = embedded().find(row.name);
    ASSERT_NE(s, nullptr) << row.name;
    EXPECT_EQ(s->topology, row.topology) << row.name;
    EXPECT_EQ(s->hosts, row.hosts) << row.name;
    EXPECT_EQ(s->chips_per_host, row.chips_per_host) << row.name;
    EXPECT_EQ(s->global_chips(), row.global_chips) << row.name;
    EXPECT_EQ(s->local_device_count(), row.local_devices) << row.name;
    EXPECT_EQ(s->device_count(), row.devices) << row.name;
    EXPECT_EQ(s->hbm_gib_per_chip, row.hbm_per_chip) << row.name;
    EXPECT_EQ(s->total_hbm_gib(), row.total_hbm) << row.name;
    EXPECT_TRUE(s->multi_host()) << row.name;
    EXPECT_EQ(s->idle_chips_on_worker_zero(), row.global_chips - row.chips_per_host) << row.name;
  }
  // Found by any name a person types: case and the generation names in use.
  auto typed = embedded().require("V5P-12288");
  ASSERT_TRUE(typed.ok()) << typed.error().message;
  EXPECT_EQ((*typed)->name, "v5p-12288");
  typed = embedded().require("trillium-256");
  ASSERT_TRUE(typed.ok()) << typed.error().message;
  EXPECT_EQ((*typed)->name, "v6e-256");
}

TEST(Catalog, EveryRowAgreesWithItsOwnName) {
  // parse_catalog enforces it; this pins the shipped file to the hosts rule in docs/catalog.md.
  for (const auto& s : embedded().slices()) {
    const Generation* g = embedded().generation(s.generation);
    ASSERT_NE(g, nullptr) << s.name;
    const int counted = g->name_counts_chips ? s.global_chips() : s.global_chips() * g->tensorcores_per_chip;
    EXPECT_EQ(s.name.substr(s.name.rfind('-') + 1), std::to_string(counted)) << s.name;
    const bool chips_named = s.generation == "v5e" || s.generation == "v6e";
    EXPECT_EQ(g->name_counts_chips, chips_named) << s.name;
  }
}

TEST(Catalog, UnknownSliceSuggestsTheClosestName) {
  auto result = embedded().require("v5litepod-61");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ExitCode::usage);
  EXPECT_NE(result.error().message.find("did you mean 'v5litepod-16'?"), std::string::npos) << result.error().message;
}

TEST(Catalog, SuggestionsSeeThroughSeparatorsAndGenerationNames) {
  // "v5e 16" is nearer v5p-16 letter by letter; what was meant is the v5e slice of 16 chips.
  for (const char* typed : {"v5e 16", "v5e_16", "V5E16", "v5e  16", "v5lite pod 16", "v5litepod 16"}) {
    auto result = embedded().require(typed);
    ASSERT_FALSE(result.ok()) << typed;
    EXPECT_EQ(result.error().code, ExitCode::usage) << typed;
    EXPECT_NE(result.error().message.find("did you mean 'v5litepod-16'?"), std::string::npos) << result.error().message;
  }
  EXPECT_NE(embedded().require("trillium 8").error().message.find("did you mean 'v6e-8'?"), std::string::npos);
  EXPECT_NE(embedded().require("v5p 12").error().message.find("did you mean 'v5p-16'?"), std::string::npos);
}

TEST(Catalog, RuntimeVersionOutsideTheRuleIsThisFilesError) {
  const auto result = parse_catalog(catalog_with_slice(
      R"({"name": "v5litepod-4", "generation": "v5e", "hosts": 1, "chips_per_host": 4, "devices_per_host": 4, "hbm_gib_per_chip": 16, "runtime_version": "V2 alpha"})"),
      "test.json");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ExitCode::config);
  const std::string& message = result.error().message;
  EXPECT_EQ(message.rfind("test.json:2:169:", 0), 0U) << message; // the value itself
  EXPECT_NE(message.find("slice 'v5litepod-4': \"runtime_version\" \"V2 alpha\" is not a runtime version"),
            std::string::npos) << message;
  EXPECT_EQ(message.find("--runtime-version"), std::string::npos) << message;
}

TEST(Catalog, NameOutsideTheAcceleratorTypeRuleIsRefused) {
  const auto message = error_of(catalog_with_slice(
      R"({"name": "V5litepod-4", "generation": "v5e", "hosts": 1, "chips_per_host": 4, "devices_per_host": 4, "hbm_gib_per_chip": 16, "runtime_version": "x"})"));
  EXPECT_NE(message.find("name \"V5litepod-4\" is not an accelerator type"), std::string::npos) << message;
}

TEST(Catalog, MalformedJsonNamesFileLineAndColumn) {
  const auto message = error_of("{\n  \"version\": 1,\n  \"slices\": [\n    {\"name\": }\n");
  EXPECT_EQ(message.rfind("test.json:4:14:", 0), 0U) << message;
  EXPECT_EQ(parse_catalog("{", "x").error().code, ExitCode::config);
}

TEST(Catalog, MissingFieldNamesTheSlice) {
  const auto message = error_of(catalog_with_slice(
      R"({"name": "v5litepod-4", "generation": "v5e", "hosts": 1, "chips_per_host": 4, "hbm_gib_per_chip": 16, "runtime_version": "x"})"));
  EXPECT_NE(message.find("slice 'v5litepod-4': missing field \"devices_per_host\""), std::string::npos) << message;
}

TEST(Catalog, MistypedFieldIsRefused) {
  const auto message = error_of(catalog_with_slice(
      R"({"name": "v5litepod-4", "generation": "v5e", "hosts": "1", "chips_per_host": 4, "devices_per_host": 4, "hbm_gib_per_chip": 16, "runtime_version": "x"})"));
  EXPECT_NE(message.find("field \"hosts\" must be an integer, not a string"), std::string::npos) << message;
}

TEST(Catalog, HostsBelowOneIsRefused) {
  const auto message = error_of(catalog_with_slice(
      R"({"name": "v5litepod-4", "generation": "v5e", "hosts": 0, "chips_per_host": 4, "devices_per_host": 4, "hbm_gib_per_chip": 16, "runtime_version": "x"})"));
  EXPECT_NE(message.find("\"hosts\" must be between 1"), std::string::npos) << message;
}

TEST(Catalog, DuplicateSliceIsRefused) {
  const std::string row =
      R"({"name": "v5litepod-4", "generation": "v5e", "hosts": 1, "chips_per_host": 4, "devices_per_host": 4, "hbm_gib_per_chip": 16, "runtime_version": "x"})";
  const auto message = error_of(catalog_with_slice(row + ",\n" + row));
  EXPECT_NE(message.find("duplicate slice 'v5litepod-4'"), std::string::npos) << message;
  EXPECT_EQ(message.rfind("test.json:3:", 0), 0U) << message;
}

TEST(Catalog, NameThatDisagreesWithFiguresIsRefused) {
  const auto message = error_of(catalog_with_slice(
      R"({"name": "v5litepod-16", "generation": "v5e", "hosts": 1, "chips_per_host": 4, "devices_per_host": 4, "hbm_gib_per_chip": 16, "runtime_version": "x"})"));
  EXPECT_NE(message.find("1 host x 4 chips gives 4 chips, but the name says 16"), std::string::npos) << message;
  const auto one = error_of(catalog_with_slice(
      R"({"name": "v5litepod-4", "generation": "v5e", "hosts": 1, "chips_per_host": 1, "devices_per_host": 1, "hbm_gib_per_chip": 16, "runtime_version": "x"})"));
  EXPECT_NE(one.find("1 host x 1 chip gives 1 chip, but the name says 4"), std::string::npos) << one;
}

TEST(Catalog, UnknownGenerationIsRefused) {
  const auto message = error_of(catalog_with_slice(
      R"({"name": "v9-4", "generation": "v9", "hosts": 1, "chips_per_host": 4, "devices_per_host": 4, "hbm_gib_per_chip": 16, "runtime_version": "x"})"));
  EXPECT_NE(message.find("unknown generation \"v9\""), std::string::npos) << message;
}

TEST(Catalog, SaysWhichGenerationsTheTpuVmApiReaches) {
  for (const char* id : {"v2", "v3", "v4"}) {
    ASSERT_NE(embedded().generation(id), nullptr) << id;
    EXPECT_TRUE(embedded().generation(id)->tpu_vm_api()) << id;
    EXPECT_EQ(embedded().generation(id)->devices, TpuDevices::accel) << id;
  }
  for (const char* id : {"v5e", "v5p", "v6e"}) {
    ASSERT_NE(embedded().generation(id), nullptr) << id;
    EXPECT_TRUE(embedded().generation(id)->tpu_vm_api()) << id;
    EXPECT_EQ(embedded().generation(id)->devices, TpuDevices::vfio) << id;
  }
  const Generation* ironwood = embedded().generation("tpu7x");
  ASSERT_NE(ironwood, nullptr);
  EXPECT_EQ(ironwood->api, GenerationApi::compute_engine_or_gke);
  for (const auto& slice : embedded().slices()) {
    EXPECT_EQ(slice.api, slice.generation == "tpu7x" ? GenerationApi::compute_engine_or_gke : GenerationApi::tpu_vm)
        << slice.name;
    EXPECT_EQ(slice.devices, embedded().generation(slice.generation)->devices) << slice.name;
    // A runtime version is what tpu-vm create takes: only where that API reaches.
    EXPECT_EQ(slice.runtime_version.empty(), slice.api != GenerationApi::tpu_vm) << slice.name;
  }
}

// TPU7x is data like any generation: the catalog lists its slices, and which backend refuses them
// is backend.hpp's business (tests/catalog/backend_test.cpp).
TEST(Catalog, Tpu7xRowsCountTensorCoresWithFourChipsAndTwoDevicesPerChip) {
  struct Row {
    const char* name;
    const char* topology;
    int hosts, chips;
  };
  for (const Row& row : {Row{"tpu7x-2", "1x1x1", 1, 1}, Row{"tpu7x-8", "2x2x1", 1, 4}, Row{"tpu7x-16", "2x2x2", 2, 8},
                         Row{"tpu7x-128", "4x4x4", 16, 64}, Row{"tpu7x-18432", "16x24x24", 2304, 9216}}) {
    auto found = embedded().require(row.name);
    ASSERT_TRUE(found.ok()) << found.error().message;
    const Slice& s = **found;
    EXPECT_EQ(s.topology, row.topology) << row.name;
    EXPECT_EQ(s.hosts, row.hosts) << row.name;
    EXPECT_EQ(s.global_chips(), row.chips) << row.name;
    EXPECT_EQ(s.device_count(), 2 * row.chips) << row.name;
    EXPECT_EQ(s.hbm_gib_per_chip, 192) << row.name;
    EXPECT_EQ(s.api, GenerationApi::compute_engine_or_gke) << row.name;
    EXPECT_TRUE(s.runtime_version.empty()) << row.name;
    EXPECT_EQ(s.gke_vms, row.hosts) << row.name;
    EXPECT_EQ(s.gke_machine_type, row.chips == 1 ? "tpu7x-standard-1t" : "tpu7x-standard-4t") << row.name;
  }
}

// GKE's node pools: the accelerator label of the generation, a -4t machine type (or -1t for one
// chip), and the nodes that gives. An 8-chip v5e/v6e slice is 1 VM on the TPU VM API but 2
// nodes on GKE.
TEST(Catalog, GkeFactsPerSize) {
  struct Row {
    const char* name;
    const char* accelerator;
    const char* machine_type;
    int nodes, chips_per_node, devices_per_node;
  };
  for (const Row& row : {Row{"v5litepod-1", "tpu-v5-lite-podslice", "ct5lp-hightpu-1t", 1, 1, 1},
                         Row{"v5litepod-4", "tpu-v5-lite-podslice", "ct5lp-hightpu-4t", 1, 4, 4},
                         Row{"v5litepod-8", "tpu-v5-lite-podslice", "ct5lp-hightpu-4t", 2, 4, 4},
                         Row{"v5litepod-16", "tpu-v5-lite-podslice", "ct5lp-hightpu-4t", 4, 4, 4},
                         Row{"v6e-8", "tpu-v6e-slice", "ct6e-standard-4t", 2, 4, 4},
                         Row{"v6e-16", "tpu-v6e-slice", "ct6e-standard-4t", 4, 4, 4},
                         Row{"v4-8", "tpu-v4-podslice", "ct4p-hightpu-4t", 1, 4, 4},
                         Row{"v5p-12288", "tpu-v5p-slice", "ct5p-hightpu-4t", 1536, 4, 4},
                         Row{"tpu7x-128", "tpu7x", "tpu7x-standard-4t", 16, 4, 8}}) {
    const Slice* s = embedded().find(row.name);
    ASSERT_NE(s, nullptr) << row.name;
    EXPECT_TRUE(s->on_gke()) << row.name;
    EXPECT_EQ(s->gke_accelerator, row.accelerator) << row.name;
    EXPECT_EQ(s->gke_machine_type, row.machine_type) << row.name;
    EXPECT_EQ(s->gke_vms, row.nodes) << row.name;
    EXPECT_EQ(s->gke_chips_per_vm, row.chips_per_node) << row.name;
    EXPECT_EQ(s->gke_devices_per_vm(), row.devices_per_node) << row.name;
  }
  EXPECT_EQ(embedded().find("v5litepod-8")->hosts, 1) << "the TPU VM API's v5litepod-8 is one 8-chip VM";
  for (const auto& s : embedded().slices()) {
    EXPECT_EQ(s.on_gke(), s.generation != "v2" && s.generation != "v3") << s.name;
    if (s.on_gke()) {
      EXPECT_EQ(s.gke_vms * s.gke_chips_per_vm, s.global_chips()) << s.name;
    }
  }
}

TEST(Catalog, GkeFactsAreChecked) {
  const std::string v5e = R"({"version": 1, "generations": {"v5e": {"name_counts": "chips", "tensorcores_per_chip": 1,
      "gke_accelerator": "tpu-v5-lite-podslice"}}, "slices": [{"name": "v5litepod-16", "generation": "v5e", "hosts": 4,
      "chips_per_host": 4, "devices_per_host": 4, "hbm_gib_per_chip": 16, "runtime_version": "x", "topology": "4x4", )";
  const auto good = parse_catalog(v5e + R"("gke": {"machine_type": "ct5lp-hightpu-4t", "vms": 4}}]})", "test.json");
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_EQ(good->slices().front().gke_accelerator, "tpu-v5-lite-podslice");
  auto message = error_of(v5e + R"("gke": {"machine_type": "ct5lp-hightpu-4t", "vms": 2}}]})");
  EXPECT_NE(message.find("2 nodes x 4 chips (ct5lp-hightpu-4t) gives 8 chips, but the slice has 16"), std::string::npos)
      << message;
  EXPECT_EQ(message.rfind("test.json:3:", 0), 0U) << message;
  message = error_of(v5e + R"("gke": {"machine_type": "ct5lp-hightpu", "vms": 4}}]})");
  EXPECT_NE(message.find("\"machine_type\" \"ct5lp-hightpu\" is not a TPU machine type ending in -<chips>t"),
            std::string::npos)
      << message;
  message = error_of(catalog_with_slice(
      R"({"name": "v5litepod-4", "generation": "v5e", "hosts": 1, "chips_per_host": 4, "devices_per_host": 4, "hbm_gib_per_chip": 16, "runtime_version": "x", "topology": "2x2", "gke": {"machine_type": "ct5lp-hightpu-4t", "vms": 1}})"));
  EXPECT_NE(message.find("\"gke\" needs its generation 'v5e' to name its \"gke_accelerator\""), std::string::npos)
      << message;
  std::string bad_topology = v5e;
  bad_topology.replace(bad_topology.find("\"4x4\""), 5, "\"2x4\"");
  message = error_of(bad_topology + R"("gke": {"machine_type": "ct5lp-hightpu-4t", "vms": 4}}]})");
  EXPECT_NE(message.find("topology \"2x4\" is not AxB or AxBxC of the slice's 16 chips"), std::string::npos) << message;
  message = error_of(R"({"version": 1, "generations": {"v5e": {"name_counts": "chips", "tensorcores_per_chip": 1,
      "gke_accelerator": "tpu v5e"}}, "slices": []})");
  EXPECT_NE(message.find("\"gke_accelerator\" \"tpu v5e\" is not a Kubernetes label value"), std::string::npos)
      << message;
}

// A runtime version is for tpu-vm create: required where that API reaches, refused elsewhere.
TEST(Catalog, RuntimeVersionOnlyForTheTpuVmApi) {
  const std::string ironwood = R"({"version": 1, "generations": {"tpu7x": {"name_counts": "tensorcores",
      "tensorcores_per_chip": 2, "api": "compute-engine-or-gke"}}, "slices": [{"name": "tpu7x-8", "generation": "tpu7x",
      "hosts": 1, "chips_per_host": 4, "devices_per_host": 8, "hbm_gib_per_chip": 192)";
  const auto good = parse_catalog(ironwood + "}]}", "test.json");
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_FALSE(good->slices().front().on_gke());
  auto message = error_of(ironwood + R"(, "runtime_version": "x"}]})");
  EXPECT_NE(message.find("\"runtime_version\" is for the Cloud TPU VM API, which does not reach tpu7x"),
            std::string::npos)
      << message;
  message = error_of(catalog_with_slice(
      R"({"name": "v5litepod-4", "generation": "v5e", "hosts": 1, "chips_per_host": 4, "devices_per_host": 4, "hbm_gib_per_chip": 16})"));
  EXPECT_NE(message.find("slice 'v5litepod-4': missing field \"runtime_version\""), std::string::npos) << message;
}

TEST(Catalog, ApiAndDevicesAreOptionalButCheckedWhenGiven) {
  const auto plain = parse_catalog(catalog_with_slice(
      R"({"name": "v5litepod-4", "generation": "v5e", "hosts": 1, "chips_per_host": 4, "devices_per_host": 4, "hbm_gib_per_chip": 16, "runtime_version": "x"})"),
      "test.json");
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(plain->slices().front().api, GenerationApi::tpu_vm);
  EXPECT_EQ(plain->slices().front().devices, TpuDevices::any);
  auto message = error_of(R"({"version": 1, "generations": {"v5e": {"name_counts": "chips", "tensorcores_per_chip": 1,
      "api": "gke"}}, "slices": []})");
  EXPECT_NE(message.find("\"api\" must be \"tpu-vm\" or \"compute-engine-or-gke\", not \"gke\""), std::string::npos)
      << message;
  EXPECT_EQ(message.rfind("test.json:2:", 0), 0U) << message;
  message = error_of(R"({"version": 1, "generations": {"v5e": {"name_counts": "chips", "tensorcores_per_chip": 1,
      "devices": "/dev/vfio"}}, "slices": []})");
  EXPECT_NE(message.find("\"devices\" must be \"accel\" or \"vfio\""), std::string::npos) << message;
}

TEST(Catalog, MissingFileIsAConfigError) {
  auto result = load_catalog_file("/nonexistent/slices.json");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ExitCode::config);
  EXPECT_NE(result.error().message.find("/nonexistent/slices.json"), std::string::npos);
}

} // namespace
} // namespace tpulaunch
