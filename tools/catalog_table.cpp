// catalog_table: the build step that turns catalog/slices.json into a C++ source holding the
// catalog as constant rows (src/catalog/catalog_rows.hpp), so `tpulaunch` never parses JSON at start.
//
//   tpulaunch_catalog_table INPUT OUTPUT
//
// INPUT is read and validated by load_catalog_file, the parser `--catalog FILE` uses at run time:
// a malformed catalog fails the build with "tpulaunch-catalog-table: error: INPUT:LINE:COLUMN: ..."
// and exit code 4, and OUTPUT is not written. OUTPUT is written whole or not at all.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "tpulaunch/catalog/catalog.hpp"
#include "tpulaunch/util/exit_code.hpp"

namespace {

using tpulaunch::Catalog;

// A C++ string literal holding exactly `text`: printable ASCII as itself, everything else (and
// the quote and backslash) as a three-digit octal escape, which no following character can extend.
std::string cpp_literal(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && c != '"' && c != '\\') {
      out += c;
    } else {
      out += fmt::format("\\{:03o}", byte);
    }
  }
  return out + "\"";
}

std::string_view api_enumerator(tpulaunch::GenerationApi api) {
  switch (api) {
  case tpulaunch::GenerationApi::tpu_vm: return "GenerationApi::tpu_vm";
  case tpulaunch::GenerationApi::compute_engine_or_gke: return "GenerationApi::compute_engine_or_gke";
  }
  return "GenerationApi::tpu_vm";
}

std::string_view devices_enumerator(tpulaunch::TpuDevices devices) {
  switch (devices) {
  case tpulaunch::TpuDevices::any: return "TpuDevices::any";
  case tpulaunch::TpuDevices::accel: return "TpuDevices::accel";
  case tpulaunch::TpuDevices::vfio: return "TpuDevices::vfio";
  }
  return "TpuDevices::any";
}

std::string table_source(const Catalog& catalog, std::string_view input) {
  std::string out = fmt::format("// Generated from {} by tools/catalog_table.cpp. Do not edit: change the catalog.\n",
                                input);
  out += "#include <array>\n\n#include \"catalog/catalog_rows.hpp\"\n\nnamespace tpulaunch {\nnamespace {\n\n";
  out += fmt::format("constexpr std::array<GenerationRow, {}> k_generations{{{{\n", catalog.generations().size());
  for (const auto& g : catalog.generations()) {
    out += fmt::format("    {{{}, {}, {}, {}, {}, {}, {}}},\n", cpp_literal(g.id), g.name_counts_chips ? "true" : "false",
                       g.tensorcores_per_chip, api_enumerator(g.api), devices_enumerator(g.devices),
                       cpp_literal(g.gke_accelerator), cpp_literal(g.source));
  }
  out += "}};\n\n";
  out += fmt::format("constexpr std::array<SliceRow, {}> k_slices{{{{\n", catalog.slices().size());
  for (const auto& s : catalog.slices()) {
    out += fmt::format("    {{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}}},\n", cpp_literal(s.name),
                       cpp_literal(s.generation), s.hosts, s.chips_per_host, s.devices_per_host, s.hbm_gib_per_chip,
                       cpp_literal(s.runtime_version), cpp_literal(s.topology), api_enumerator(s.api),
                       devices_enumerator(s.devices), cpp_literal(s.gke_accelerator), cpp_literal(s.gke_machine_type),
                       s.gke_vms, s.gke_chips_per_vm);
  }
  out += "}};\n\n";
  out += fmt::format("constexpr std::array<ZoneRow, {}> k_zones{{{{\n", catalog.zones().size());
  for (const auto& z : catalog.zones()) {
    std::string offers;
    for (const auto& item : z.offers) {
      offers += (offers.empty() ? "" : " ") + item;
    }
    out += fmt::format("    {{{}, {}}},\n", cpp_literal(z.name), cpp_literal(offers));
  }
  out += "}};\n\n} // namespace\n\n";
  out += "Result<Catalog> load_embedded_catalog() {\n"
         "  return catalog_from_rows(k_generations, k_slices, k_zones, std::string(k_embedded_catalog_origin));\n"
         "}\n\n} // namespace tpulaunch\n";
  return out;
}

int fail(const std::string& message, tpulaunch::ExitCode code) {
  std::fprintf(stderr, "tpulaunch-catalog-table: error: %s\n", message.c_str());
  return tpulaunch::to_int(code);
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    return fail("usage: tpulaunch_catalog_table INPUT OUTPUT", tpulaunch::ExitCode::usage);
  }
  const std::string input = argv[1];
  const std::filesystem::path output = argv[2];
  auto catalog = tpulaunch::load_catalog_file(input);
  if (!catalog) {
    return fail(catalog.error().message, catalog.error().code);
  }
  const std::string text = table_source(*catalog, input);
  const std::filesystem::path temp = output.string() + ".tmp";
  {
    std::ofstream file(temp, std::ios::binary | std::ios::trunc);
    file << text;
    file.close();
    if (!file) {
      return fail(fmt::format("cannot write {}", temp.string()), tpulaunch::ExitCode::failure);
    }
  }
  std::error_code ec;
  std::filesystem::rename(temp, output, ec);
  if (ec) {
    return fail(fmt::format("cannot rename {} to {}: {}", temp.string(), output.string(), ec.message()),
                tpulaunch::ExitCode::failure);
  }
  return 0;
}
