// tpulaunch slices: list the catalog with its derived figures.
#include <fmt/format.h>

#include "commands.hpp"
#include "tpulaunch/catalog/figure.hpp"
#include "tpulaunch/render/render.hpp"

namespace tpulaunch::cli {
namespace {

struct SlicesArgs {
  Format format = Format::text;
  bool multi_host = false;
  bool single_host = false;
  std::vector<std::string> only; // --only a,b,c: split by CLI11 (->delimiter)
};

// The slices to show: --only's names in their order (any case or alias; the first unknown one is
// a usage error with a suggestion), else the whole catalog; then the host filters.
Result<std::vector<const Slice*>> select(const Catalog& catalog, const SlicesArgs& args) {
  std::vector<const Slice*> out;
  for (const auto& name : args.only) {
    TPULAUNCH_TRY(const Slice* slice, catalog.require(name));
    out.push_back(slice);
  }
  if (args.only.empty()) {
    for (const auto& s : catalog.slices()) {
      out.push_back(&s);
    }
  }
  std::erase_if(out, [&](const Slice* s) {
    return (args.multi_host && !s->multi_host()) || (args.single_host && s->multi_host());
  });
  return out;
}

// The GKE node pool of a slice, "ct5lp-hightpu-4t x 4", or "-".
std::string gke_column(const Slice& s) {
  return s.on_gke() ? fmt::format("{} x {}", s.gke_machine_type, s.gke_vms) : std::string("-");
}

std::string table(const std::vector<const Slice*>& slices) {
  std::string out = fmt::format("{:<14} {:>5} {:>5} {:>6} {:>7} {:>6} {:>7} {:>9}  {:<10} {:<19} {}\n", "SLICE", "HOSTS",
                                "CHIPS", "/HOST", "DEVICES", "/HOST", "HBM/CHIP", "HBM TOTAL", "MULTI-HOST", "RUNTIME",
                                "GKE NODES");
  for (const Slice* s : slices) {
    out += fmt::format("{:<14} {:>5} {:>5} {:>6} {:>7} {:>6} {:>6}G {:>8}G  {:<10} {:<19} {}\n", s->name, s->hosts,
                       s->global_chips(), s->chips_per_host, s->device_count(), s->devices_per_host,
                       s->hbm_gib_per_chip, s->total_hbm_gib(), s->multi_host() ? "yes" : "no",
                       s->runtime_version.empty() ? "-" : s->runtime_version, gke_column(*s));
  }
  return out;
}

// Which generations the TPU VM API reaches, which it does not (Compute Engine or GKE only), and
// GKE's accelerator label of each generation the catalog has GKE facts for.
std::string api_lines(const Catalog& catalog) {
  std::string reached;
  std::string not_reached;
  std::string gke;
  for (const auto& generation : catalog.generations()) {
    std::string& list = generation.tpu_vm_api() ? reached : not_reached;
    list += (list.empty() ? "" : ", ") + generation.id;
    if (!generation.gke_accelerator.empty()) {
      gke += fmt::format("{}{} {}", gke.empty() ? "" : ", ", generation.id, generation.gke_accelerator);
    }
  }
  std::string out = fmt::format("\nTPU VM API (gcloud compute tpus tpu-vm): {}\n", reached.empty() ? "-" : reached);
  if (!not_reached.empty()) {
    out += fmt::format("not reached by it (provisioned through Compute Engine or GKE; tpulaunch's TPU-VM route refuses "
                       "them): {}\n",
                       not_reached);
  }
  out += fmt::format("GKE (cloud.google.com/gke-tpu-accelerator): {}\n", gke.empty() ? "-" : gke);
  return out;
}

nlohmann::ordered_json generations_json(const Catalog& catalog) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& generation : catalog.generations()) {
    list.push_back({{"id", generation.id},
                    {"api", to_string(generation.api)},
                    {"tpu_vm_api", generation.tpu_vm_api()},
                    {"devices", to_string(generation.devices)},
                    {"gke_accelerator", generation.gke_accelerator.empty() ? nlohmann::ordered_json(nullptr)
                                                                           : nlohmann::ordered_json(generation.gke_accelerator)}});
  }
  return list;
}

Result<Output> run_slices(const SlicesArgs& args, const Globals& globals) {
  if (args.multi_host && args.single_host) {
    return usage_error("--multi-host and --single-host exclude each other");
  }
  TPULAUNCH_TRY(const Catalog catalog, load_catalog(globals));
  TPULAUNCH_TRY(const auto slices, select(catalog, args));
  Output output;
  if (args.format == Format::json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const Slice* s : slices) {
      auto row = slice_json(*s);
      row["routes"] = slice_routes(*s, catalog);
      row["gke"] = gke_json(*s);
      list.push_back(std::move(row));
    }
    TPULAUNCH_TRY(output.out,
                  json_text(nlohmann::ordered_json{
                      {"catalog", catalog.origin()}, {"generations", generations_json(catalog)}, {"slices", list}}));
  } else if (args.format == Format::svg) {
    output.out = render_topology_svg(slices);
  } else {
    output.out = table(slices) + api_lines(catalog);
  }
  return output;
}

} // namespace

Command setup_slices(CLI::App& parent, const Globals& globals) {
  auto args = std::make_shared<SlicesArgs>();
  CLI::App* app = parent.add_subcommand("slices", "List the slice catalog with derived figures");
  // Its options are registered when the command line names it (CLI11 calls this before parsing
  // the subcommand's words): a run pays for one subcommand's options, not all ten.
  app->preparse_callback([app, args](std::size_t /*remaining*/) {
    add_format_option(*app, args->format, {Format::table, Format::json, Format::svg});
    app->add_flag("--multi-host", args->multi_host, "only slices with more than one host (they need --worker=all)");
    app->add_flag("--single-host", args->single_host, "only 1-host slices");
    app->add_option("--only", args->only, "comma-separated slice names, in the order to show them")
        ->delimiter(',')
        ->allow_extra_args(false);
    app->footer("Examples:\n  tpulaunch slices --multi-host\n"
                "  tpulaunch slices --format svg --only v5litepod-4,v5litepod-8,v5litepod-16,v6e-16 > topology.svg\n");
  });
  return Command{app, [args, &globals]() { return run_slices(*args, globals); }};
}

} // namespace tpulaunch::cli
