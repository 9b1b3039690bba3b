// tpulaunch slice: answer the course's questions about one slice from the catalog.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.hpp"
#include "tpulaunch/gcloud/gcloud.hpp"
#include "tpulaunch/render/render.hpp"
#include "tpulaunch/shell/shell.hpp"

namespace tpulaunch::cli {
namespace {

struct SliceArgs {
  std::string name;
  long long microbatch = 0;
  double state_gib = -1;
  Format format = Format::text;
};

// The create command for the slice, with placeholders for the name and zone.
ShellLine create_line(const Slice& s) {
  return gcloud::tpu_vm_create({.node = "TPU_NAME",
                                .at = {.zone = "ZONE", .project = {}},
                                .accelerator_type = s.name,
                                .version = s.runtime_version,
                                .provisioning = gcloud::Provisioning::standard,
                                .async = false,
                                .internal_ips = false,
                                .mark = {}});
}

// Which API provisions the slice, its GKE node pool, and the tpu-vm create line where that API
// reaches it.
std::string reach_lines(const Slice& s) {
  std::string out;
  const std::string_view device_files = s.devices == TpuDevices::accel  ? "/dev/accel*"
                                         : s.devices == TpuDevices::vfio ? "/dev/vfio/*"
                                                                         : "/dev/accel* or /dev/vfio/*";
  if (s.api == GenerationApi::tpu_vm) {
    out += fmt::format("  API:                        TPU VM (gcloud compute tpus tpu-vm); TPU devices {}\n", device_files);
  } else {
    out += fmt::format("  API:                        Compute Engine or GKE, not the Cloud TPU VM API: tpulaunch reaches "
                       "it through GKE only\n");
  }
  if (s.on_gke()) {
    out += fmt::format("  GKE:                        {} nodes of {} ({} chips, {} JAX devices each); "
                       "gke-tpu-accelerator={}, gke-tpu-topology={}\n",
                       s.gke_vms, s.gke_machine_type, s.gke_chips_per_vm, s.gke_devices_per_vm(), s.gke_accelerator,
                       s.topology);
  }
  if (s.api == GenerationApi::tpu_vm) {
    out += fmt::format("  create:  {}\n", to_shell(create_line(s)));
  }
  return out;
}

Result<Output> run_slice(const SliceArgs& args, const Globals& globals) {
  TPULAUNCH_TRY(const Catalog catalog, load_catalog(globals));
  TPULAUNCH_TRY(const Slice* found, catalog.require(args.name));
  const Slice& s = *found;
  const long long per_host_batch = args.microbatch * s.chips_per_host;
  const long long global_batch = args.microbatch * s.global_chips();
  const bool fits = args.state_gib >= 0 && args.state_gib <= static_cast<double>(s.total_hbm_gib());

  Output output;
  if (args.format == Format::json) {
    auto j = slice_json(s);
    j["idle_chips_if_only_worker_0"] = s.idle_chips_on_worker_zero();
    j["needs_worker_all"] = s.multi_host();
    if (args.microbatch > 0) {
      j["microbatch_per_chip"] = args.microbatch;
      j["per_host_batch"] = per_host_batch;
      j["global_batch"] = global_batch;
    }
    if (args.state_gib >= 0) {
      j["state_gib"] = args.state_gib;
      j["state_fits"] = fits;
    }
    j["api"] = to_string(s.api);
    j["tpu_devices"] = to_string(s.devices);
    j["routes"] = slice_routes(s, catalog);
    j["gke"] = gke_json(s);
    j["create_command"] = s.api == GenerationApi::tpu_vm ? nlohmann::ordered_json(to_shell(create_line(s))) : nullptr;
    j["zones"] = catalog.zones_offering(s);
    TPULAUNCH_TRY(output.out, json_text(j));
    return output;
  }
  std::string& out = output.out;
  // What the number in the name counts, so v5p-12288 is not read as 12288 chips.
  std::string counts;
  if (const Generation* generation = catalog.generation(s.generation); generation != nullptr) {
    const std::string number = s.name.substr(s.name.rfind('-') + 1);
    counts = generation->name_counts_chips
                 ? fmt::format("; the {} in the name counts chips", number)
                 : fmt::format("; the {} in the name counts TensorCores, {} per chip", number,
                               generation->tensorcores_per_chip);
  }
  out += fmt::format("{} ({}, topology {}{})\n", s.name, s.generation, s.topology.empty() ? "-" : s.topology, counts);
  out += fmt::format("  hosts (TPU VMs):            {}{}\n", s.hosts, s.multi_host() ? "  (multi-host: --worker=all)" : "");
  out += fmt::format("  chips per host:             {}\n", s.chips_per_host);
  out += fmt::format("  global chips:               {}\n", s.global_chips());
  out += fmt::format("  jax.local_device_count():   {}  (on each host, after jax.distributed.initialize())\n",
                     s.local_device_count());
  out += fmt::format("  jax.device_count():         {}\n", s.device_count());
  out += fmt::format("  idle if only worker 0 runs: {}{}\n",
                     counted(static_cast<std::size_t>(s.idle_chips_on_worker_zero()), "chip"),
                     s.multi_host() ? "  (and worker 0 hangs in initialize waiting for the others)" : "");
  if (args.microbatch > 0) {
    out += fmt::format("  batch for microbatch {}:     {} per host, {} global\n", args.microbatch, per_host_batch,
                       global_batch);
  }
  out += fmt::format("  HBM:                        {} GiB per chip, {} GiB total\n", s.hbm_gib_per_chip, s.total_hbm_gib());
  if (args.state_gib >= 0) {
    out += fmt::format("  {} GiB of sharded state:     {} ({} GiB total HBM)\n", args.state_gib,
                       fits ? "fits" : "does NOT fit", s.total_hbm_gib());
  }
  out += fmt::format("  runtime version:            {}\n", s.runtime_version.empty() ? "-" : s.runtime_version);
  if (!catalog.zones().empty()) {
    const auto zones = catalog.zones_offering(s);
    out += fmt::format("  zones (catalog's table):    {}\n",
                       zones.empty() ? std::string("none listed") : fmt::format("{}", fmt::join(zones, ", ")));
  }
  out += reach_lines(s);
  return output;
}

} // namespace

Command setup_slice(CLI::App& parent, const Globals& globals) {
  auto args = std::make_shared<SliceArgs>();
  CLI::App* app = parent.add_subcommand("slice", "Show one slice: devices, idle chips, batch sizes, HBM fit, create line");
  // Its options are registered when the command line names it (CLI11 calls this before parsing
  // the subcommand's words): a run pays for one subcommand's options, not all ten.
  app->preparse_callback([app, args](std::size_t /*remaining*/) {
    app->add_option("name", args->name, "accelerator type, e.g. v5litepod-16")->required();
    app->add_option("--microbatch", args->microbatch, "per-chip microbatch, to derive per-host and global batch")
        ->check(CLI::Range(1LL, 1LL << 32));
    app->add_option("--state-gib", args->state_gib, "GiB of sharded state, to check against total HBM")
        ->check(CLI::Range(0.0, 1e9));
    add_format_option(*app, args->format, {Format::text, Format::json});
    app->footer("Examples:\n  tpulaunch slice v5litepod-16 --microbatch 8\n  tpulaunch slice v6e-16 --state-gib 300\n");
  });
  return Command{app, [args, &globals]() { return run_slice(*args, globals); }};
}

} // namespace tpulaunch::cli
