#include "tpulaunch/catalog/catalog.hpp"

#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "catalog/catalog_rows.hpp"
#include "tpulaunch/json/json_reader.hpp"
#include "tpulaunch/catalog/slice_names.hpp"
#include "tpulaunch/util/spelling.hpp"
#include "tpulaunch/util/text_file.hpp"
#include "tpulaunch/values/validate.hpp"

namespace tpulaunch {
namespace {

// Upper bounds that no real slice comes near; they keep derived products far from overflow.
constexpr long long k_max_hosts = 100000;
constexpr long long k_max_per_host = 64;
constexpr long long k_max_hbm_gib = 4096;

// An accelerator type as Google spells them (v5litepod-16, v2-8): a lowercase letter first, then
// lowercase letters, digits and '-', at most 63. The name reaches gcloud's --accelerator-type,
// and a slice name typed in any case is looked up in lower case, so a row outside this rule
// could never be planned for as written.
bool is_accelerator_type(std::string_view name) {
  if (name.empty() || name.size() > 63 || name.front() < 'a' || name.front() > 'z') {
    return false;
  }
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

// The number in an accelerator type: "v5litepod-16" -> 16.
std::optional<long long> name_number(std::string_view name) {
  const auto dash = name.rfind('-');
  if (dash == std::string_view::npos || dash + 1 >= name.size()) {
    return std::nullopt;
  }
  long long value = 0;
  const char* first = name.data() + dash + 1;
  const char* last = name.data() + name.size();
  if (auto [ptr, ec] = std::from_chars(first, last, value); ec != std::errc{} || ptr != last) {
    return std::nullopt;
  }
  return value;
}

// A Kubernetes label value (the gke-tpu-accelerator and gke-tpu-topology node labels): at most 63
// characters, alphanumerics at both ends, '-', '_' and '.' between.
bool is_label_value(std::string_view value) {
  const auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  if (value.empty() || value.size() > 63 || !alnum(value.front()) || !alnum(value.back())) {
    return false;
  }
  return std::all_of(value.begin(), value.end(), [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

// The chips of a topology "AxB" or "AxBxC" (each side 1..4096), or nullopt for anything else.
std::optional<long long> topology_chips(std::string_view topology) {
  long long chips = 1;
  int sides = 0;
  for (std::size_t start = 0; start <= topology.size(); ++sides) {
    const std::size_t end = std::min(topology.find('x', start), topology.size());
    long long side = 0;
    const char* first = topology.data() + start;
    const char* last = topology.data() + end;
    if (auto [ptr, ec] = std::from_chars(first, last, side); ec != std::errc{} || ptr != last || side < 1 || side > 4096) {
      return std::nullopt;
    }
    chips *= side;
    start = end + 1;
  }
  return sides == 2 || sides == 3 ? std::optional<long long>(chips) : std::nullopt;
}

// The chips per node a GKE TPU machine type names by its "-<N>t" ending: "ct5lp-hightpu-4t" -> 4.
std::optional<long long> machine_type_chips(std::string_view machine_type) {
  if (!is_accelerator_type(machine_type) || machine_type.size() < 3 || machine_type.back() != 't') {
    return std::nullopt;
  }
  return name_number(machine_type.substr(0, machine_type.size() - 1));
}

Result<Generation> parse_generation(const JsonDocument& doc, const std::string& id, const JsonValue& value) {
  const std::string pointer = "/generations/" + json_pointer_token(id);
  TPULAUNCH_CHECK(require_object(doc, value, pointer, fmt::format("generation '{}'", printable(id))));
  const JsonObject object(doc, value, pointer, fmt::format("generation '{}'", printable(id)));
  Generation generation;
  generation.id = id;
  TPULAUNCH_TRY(const std::string counts, object.string("name_counts"));
  if (counts != "chips" && counts != "tensorcores") {
    return object.error_at("name_counts", fmt::format("\"name_counts\" must be \"chips\" or \"tensorcores\", not \"{}\"", printable(counts)));
  }
  generation.name_counts_chips = counts == "chips";
  TPULAUNCH_TRY(const long long cores, object.integer("tensorcores_per_chip", 1, 8));
  generation.tensorcores_per_chip = static_cast<int>(cores);
  // Optional, so catalogs written before these facts keep their meaning: the TPU VM API, and
  // both device kinds checked.
  TPULAUNCH_TRY(const std::string api, object.optional_string("api"));
  if (api == "compute-engine-or-gke") {
    generation.api = GenerationApi::compute_engine_or_gke;
  } else if (!api.empty() && api != "tpu-vm") {
    return object.error_at("api", fmt::format("\"api\" must be \"tpu-vm\" or \"compute-engine-or-gke\", not \"{}\"",
                                              printable(api)));
  }
  TPULAUNCH_TRY(const std::string devices, object.optional_string("devices"));
  if (devices == "accel") {
    generation.devices = TpuDevices::accel;
  } else if (devices == "vfio") {
    generation.devices = TpuDevices::vfio;
  } else if (!devices.empty()) {
    return object.error_at("devices", fmt::format("\"devices\" must be \"accel\" or \"vfio\", not \"{}\"",
                                                  printable(devices)));
  }
  TPULAUNCH_TRY(generation.gke_accelerator, object.optional_string("gke_accelerator"));
  if (object.has("gke_accelerator") && !is_label_value(generation.gke_accelerator)) {
    return object.error_at("gke_accelerator", fmt::format("\"gke_accelerator\" \"{}\" is not a Kubernetes label value",
                                                          printable(generation.gke_accelerator)));
  }
  TPULAUNCH_TRY(generation.source, object.optional_string("source"));
  return generation;
}

// "runtime_version": required for a generation the TPU VM API reaches (it reaches gcloud's
// --version=, so a bad one is this file's error, found here, and never a bad --runtime-version the
// user did not give), and refused for another, which no tpu-vm create would take.
Status check_runtime_version(const JsonObject& object, const Slice& slice) {
  if (slice.api != GenerationApi::tpu_vm) {
    if (object.has("runtime_version")) {
      return object.error_at("runtime_version",
                             fmt::format("\"runtime_version\" is for the Cloud TPU VM API, which does not reach {}: "
                                         "leave it out",
                                         printable(slice.generation)));
    }
    return Ok{};
  }
  if (const ValueRule& rule = value_rule(ValueKind::runtime_version); !rule.accepts(slice.runtime_version)) {
    return object.error_at("runtime_version", fmt::format("\"runtime_version\" \"{}\" is not a runtime version: {}",
                                                          printable(slice.runtime_version), rule.description));
  }
  return Ok{};
}

// "gke": {"machine_type": "ct5lp-hightpu-4t", "vms": 4}: the slice's GKE node pool. Its nodes
// times the machine type's chips must be the slice's chips, and the topology (GKE's
// gke-tpu-topology label) must multiply out to them too.
Status parse_gke(const JsonDocument& doc, const JsonObject& object, const Generation& generation, Slice& slice) {
  if (!object.has("gke")) {
    return Ok{};
  }
  if (generation.gke_accelerator.empty()) {
    return object.error_at("gke", fmt::format("\"gke\" needs its generation '{}' to name its \"gke_accelerator\"",
                                              printable(generation.id)));
  }
  TPULAUNCH_TRY(const JsonValue* value, object.member("gke", JsonValue::value_t::object));
  const JsonObject gke(doc, *value, object.pointer_of("gke"), fmt::format("slice '{}' gke", printable(slice.name)));
  TPULAUNCH_TRY(slice.gke_machine_type, gke.string("machine_type"));
  TPULAUNCH_TRY(const long long vms, gke.integer("vms", 1, k_max_hosts));
  const auto per_vm = machine_type_chips(slice.gke_machine_type);
  if (!per_vm || *per_vm < 1 || *per_vm > k_max_per_host) {
    return gke.error_at("machine_type", fmt::format("\"machine_type\" \"{}\" is not a TPU machine type ending in "
                                                    "-<chips>t",
                                                    printable(slice.gke_machine_type)));
  }
  if (vms * *per_vm != slice.global_chips()) {
    return gke.error_at("vms", fmt::format("{} nodes x {} chips ({}) gives {} chips, but the slice has {}", vms,
                                           *per_vm, slice.gke_machine_type, vms * *per_vm, slice.global_chips()));
  }
  if (topology_chips(slice.topology) != std::optional<long long>(slice.global_chips()) ||
      !is_label_value(slice.topology)) {
    return object.error_at(object.has("topology") ? "topology" : "gke",
                           fmt::format("topology \"{}\" is not AxB or AxBxC of the slice's {} chips, which GKE's "
                                       "topology label needs",
                                       printable(slice.topology), slice.global_chips()));
  }
  slice.gke_accelerator = generation.gke_accelerator;
  slice.gke_vms = static_cast<int>(vms);
  slice.gke_chips_per_vm = static_cast<int>(*per_vm);
  return Ok{};
}

// Long (about 85 lines) because it reads one row field by field, each with its own message, in
// the order the messages are documented.
Result<Slice> parse_slice(const JsonDocument& doc, std::size_t index, const JsonValue& value,
                          const std::vector<Generation>& generations) {
  const std::string pointer = fmt::format("/slices/{}", index);
  TPULAUNCH_CHECK(require_object(doc, value, pointer, fmt::format("slice #{}", index)));
  std::string context = fmt::format("slice #{}", index);
  if (auto it = value.find("name"); it != value.end() && it->is_string()) {
    context = fmt::format("slice '{}'", printable(it->get<std::string>()));
  }
  const JsonObject object(doc, value, pointer, context);
  Slice slice;
  TPULAUNCH_TRY(slice.name, object.string("name"));
  TPULAUNCH_TRY(slice.generation, object.string("generation"));
  TPULAUNCH_TRY(const long long hosts, object.integer("hosts", 1, k_max_hosts));
  TPULAUNCH_TRY(const long long chips, object.integer("chips_per_host", 1, k_max_per_host));
  TPULAUNCH_TRY(const long long devices, object.integer("devices_per_host", 1, k_max_per_host));
  TPULAUNCH_TRY(const long long hbm, object.integer("hbm_gib_per_chip", 1, k_max_hbm_gib));
  TPULAUNCH_TRY(slice.runtime_version, object.optional_string("runtime_version"));
  TPULAUNCH_TRY(slice.topology, object.optional_string("topology"));
  if (!is_accelerator_type(slice.name)) {
    return object.error_at("name", fmt::format("name \"{}\" is not an accelerator type: a lowercase letter first, "
                                               "then lowercase letters, digits and '-', at most 63 characters",
                                               printable(slice.name)));
  }
  slice.hosts = static_cast<int>(hosts);
  slice.chips_per_host = static_cast<int>(chips);
  slice.devices_per_host = static_cast<int>(devices);
  slice.hbm_gib_per_chip = static_cast<int>(hbm);

  const Generation* generation = nullptr;
  for (const auto& candidate : generations) {
    if (candidate.id == slice.generation) {
      generation = &candidate;
    }
  }
  if (generation == nullptr) {
    return object.error_at("generation", fmt::format("unknown generation \"{}\"", printable(slice.generation)));
  }
  slice.api = generation->api;
  slice.devices = generation->devices;
  if (slice.api == GenerationApi::tpu_vm && !object.has("runtime_version")) {
    TPULAUNCH_TRY(slice.runtime_version, object.string("runtime_version")); // its "missing" message
  }
  TPULAUNCH_CHECK(check_runtime_version(object, slice));
  // The name is the contract with gcloud: its number counts chips or TensorCores, and a row whose
  // figures disagree with its own name would plan the wrong number of workers.
  const auto number = name_number(slice.name);
  if (!number) {
    return object.error_at("name", fmt::format("name \"{}\" is not of the form <type>-<count>", printable(slice.name)));
  }
  const long long expected = generation->name_counts_chips
                                 ? slice.global_chips()
                                 : static_cast<long long>(slice.global_chips()) * generation->tensorcores_per_chip;
  if (*number != expected) {
    return object.error_at(
        "hosts",
        fmt::format("{} x {} gives {}, but the name says {}", counted(static_cast<std::size_t>(slice.hosts), "host"),
                    counted(static_cast<std::size_t>(slice.chips_per_host), "chip"),
                    counted(static_cast<std::size_t>(expected), generation->name_counts_chips ? "chip" : "TensorCore"),
                    *number));
  }
  TPULAUNCH_CHECK(parse_gke(doc, object, *generation, slice));
  return slice;
}

// "zones": {"us-west4-a": ["v5e", "v2-8"], ...}: each name follows the zone rule --zone follows,
// and each item is a generation id or a slice name of this catalog.
Result<std::vector<Zone>> parse_zones(const JsonDocument& doc, const JsonValue& value,
                                      const std::vector<Generation>& generations, const std::set<std::string>& slices) {
  std::vector<Zone> zones;
  const ValueRule& rule = value_rule(ValueKind::zone);
  for (const auto& [name, offers] : value.items()) {
    const std::string pointer = "/zones/" + json_pointer_token(name);
    if (!rule.accepts(name)) {
      return config_error(fmt::format("{}: zone \"{}\" is not a zone name: {}", doc.where(pointer + "#key"),
                                      printable(name), rule.description));
    }
    if (!offers.is_array() || offers.empty()) {
      return config_error(fmt::format("{}: zone '{}' must list what it offers (generation ids or slice names)",
                                      doc.where(pointer), printable(name)));
    }
    Zone zone{name, {}};
    for (std::size_t i = 0; i < offers.size(); ++i) {
      const JsonValue& item = offers[i];
      const bool known = item.is_string() && (slices.contains(item.get<std::string>()) ||
                                              std::any_of(generations.begin(), generations.end(), [&](const Generation& g) {
                                                return g.id == item.get<std::string>();
                                              }));
      if (!known) {
        return config_error(fmt::format("{}: zone '{}': {} is neither a generation nor a slice of this catalog",
                                        doc.where(fmt::format("{}/{}", pointer, i)), printable(name),
                                        item.is_string() ? fmt::format("\"{}\"", printable(item.get<std::string>()))
                                                         : std::string("a value that is not a string")));
      }
      zone.offers.push_back(item.get<std::string>());
    }
    zones.push_back(std::move(zone));
  }
  return zones;
}

} // namespace

Catalog::Catalog(std::vector<Generation> generations, std::vector<Slice> slices, std::string origin,
                 std::vector<Zone> zones)
    : m_generations(std::move(generations)), m_slices(std::move(slices)), m_origin(std::move(origin)),
      m_zones(std::move(zones)) {}

const Zone* Catalog::zone(std::string_view name) const {
  for (const auto& zone : m_zones) {
    if (zone.name == name) {
      return &zone;
    }
  }
  return nullptr;
}

namespace {

bool zone_offers(const Zone& zone, const Slice& slice) {
  return std::any_of(zone.offers.begin(), zone.offers.end(),
                     [&](const std::string& item) { return item == slice.name || item == slice.generation; });
}

} // namespace

std::vector<std::string> Catalog::zones_offering(const Slice& slice) const {
  std::vector<std::string> names;
  for (const auto& zone : m_zones) {
    if (zone_offers(zone, slice)) {
      names.push_back(zone.name);
    }
  }
  return names;
}

std::optional<std::string> Catalog::zone_warning(std::string_view zone_name, const Slice& slice) const {
  if (m_zones.empty() || zone_name.empty()) {
    return std::nullopt;
  }
  const std::vector<std::string> offering = zones_offering(slice);
  const std::string where = offering.empty() ? std::string("no zone of the table offers it")
                                             : fmt::format("it lists {} in {}", slice.name, fmt::join(offering, ", "));
  const Zone* found = zone(zone_name);
  if (found == nullptr) {
    std::vector<std::string> names;
    for (const auto& known : m_zones) {
      names.push_back(known.name);
    }
    return fmt::format("zone '{}' is not in the catalog's table of Cloud TPU zones{}; {}. gcloud has the last word "
                       "(the table: docs/catalog.md)",
                       printable(zone_name), did_you_mean(zone_name, names), where);
  }
  if (!zone_offers(*found, slice)) {
    return fmt::format("{} is not offered in {} by the catalog's table of Cloud TPU zones; {}. gcloud has the last "
                       "word (the table: docs/catalog.md)",
                       slice.name, found->name, where);
  }
  return std::nullopt;
}

const Slice* Catalog::find(std::string_view name) const {
  for (const auto& slice : m_slices) {
    if (slice.name == name) {
      return &slice;
    }
  }
  return nullptr;
}

const Generation* Catalog::generation(std::string_view id) const {
  for (const auto& generation : m_generations) {
    if (generation.id == id) {
      return &generation;
    }
  }
  return nullptr;
}

Result<const Slice*> Catalog::require(std::string_view name) const {
  return find_slice(*this, name);
}

std::string_view to_string(GenerationApi api) {
  return api == GenerationApi::tpu_vm ? "tpu-vm" : "compute-engine-or-gke";
}

std::string_view to_string(TpuDevices devices) {
  switch (devices) {
  case TpuDevices::accel: return "accel";
  case TpuDevices::vfio: return "vfio";
  case TpuDevices::any: return "any";
  }
  return "any";
}

Result<Catalog> parse_catalog(std::string_view json, std::string_view origin) {
  TPULAUNCH_TRY(const JsonDocument doc, parse_json(json, origin));
  TPULAUNCH_CHECK(require_object(doc, doc.value, "", "the catalog"));
  const JsonObject root(doc, doc.value, "", "catalog");
  TPULAUNCH_TRY(const long long version, root.integer("version", 1, 1));
  (void)version;
  TPULAUNCH_TRY(const JsonValue* generations_json, root.member("generations", JsonValue::value_t::object));
  TPULAUNCH_TRY(const JsonValue* slices_json, root.member("slices", JsonValue::value_t::array));

  std::vector<Generation> generations;
  for (const auto& [id, value] : generations_json->items()) {
    TPULAUNCH_TRY(Generation generation, parse_generation(doc, id, value));
    generations.push_back(std::move(generation));
  }
  if (slices_json->empty()) {
    return root.error_at("slices", "\"slices\" must list at least one slice");
  }
  std::vector<Slice> slices;
  std::set<std::string> names;
  for (std::size_t i = 0; i < slices_json->size(); ++i) {
    TPULAUNCH_TRY(Slice slice, parse_slice(doc, i, (*slices_json)[i], generations));
    if (!names.insert(slice.name).second) {
      return config_error(fmt::format("{}: duplicate slice '{}'", doc.where(fmt::format("/slices/{}/name", i)), printable(slice.name)));
    }
    slices.push_back(std::move(slice));
  }
  std::vector<Zone> zones;
  if (root.has("zones")) {
    TPULAUNCH_TRY(const JsonValue* zones_json, root.member("zones", JsonValue::value_t::object));
    TPULAUNCH_TRY(zones, parse_zones(doc, *zones_json, generations, names));
  }
  return Catalog(std::move(generations), std::move(slices), std::string(origin), std::move(zones));
}

Catalog catalog_from_rows(std::span<const GenerationRow> generations, std::span<const SliceRow> slices,
                          std::span<const ZoneRow> zones, std::string origin) {
  std::vector<Generation> generation_list;
  generation_list.reserve(generations.size());
  for (const auto& row : generations) {
    generation_list.push_back(
        Generation{std::string(row.id), row.name_counts_chips, row.tensorcores_per_chip, row.api, row.devices,
                   std::string(row.gke_accelerator), std::string(row.source)});
  }
  std::vector<Slice> slice_list;
  slice_list.reserve(slices.size());
  for (const auto& row : slices) {
    slice_list.push_back(Slice{std::string(row.name), std::string(row.generation), row.hosts, row.chips_per_host,
                               row.devices_per_host, row.hbm_gib_per_chip, std::string(row.runtime_version),
                               std::string(row.topology), row.api, row.devices, std::string(row.gke_accelerator),
                               std::string(row.gke_machine_type), row.gke_vms, row.gke_chips_per_vm});
  }
  std::vector<Zone> zone_list;
  zone_list.reserve(zones.size());
  for (const auto& row : zones) {
    Zone zone{std::string(row.name), {}};
    for (std::size_t start = 0; start < row.offers.size();) {
      const std::size_t space = std::min(row.offers.find(' ', start), row.offers.size());
      zone.offers.emplace_back(row.offers.substr(start, space - start));
      start = space + 1;
    }
    zone_list.push_back(std::move(zone));
  }
  spdlog::debug("catalog: the built-in table, {} ({} slices, {} zones)", origin, slice_list.size(), zone_list.size());
  return Catalog(std::move(generation_list), std::move(slice_list), std::move(origin), std::move(zone_list));
}

Result<Catalog> load_catalog_file(const std::string& path) {
  TPULAUNCH_TRY(const std::string text, read_text_file(path, "catalog"));
  TPULAUNCH_TRY(Catalog catalog, parse_catalog(text, path));
  spdlog::debug("catalog: the file {} ({} slices)", printable(path), catalog.slices().size());
  return catalog;
}

} // namespace tpulaunch
