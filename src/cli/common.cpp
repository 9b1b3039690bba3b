#include <array>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <tuple>

#include <fmt/format.h>

#include "tpulaunch/util/spelling.hpp"

#include "commands.hpp"
#include "tpulaunch/plan/request.hpp"

namespace tpulaunch::cli {

std::string message_line(const Error& error) {
  return fmt::format("tpulaunch: {}: {}\n", error.code == ExitCode::refused ? "refused" : "error", error.message);
}

Result<Catalog> load_catalog(const Globals& globals) {
  if (globals.catalog.empty()) {
    return load_embedded_catalog();
  }
  return load_catalog_file(globals.catalog);
}

nlohmann::ordered_json gke_json(const Slice& slice) {
  if (!slice.on_gke()) {
    return nullptr;
  }
  return nlohmann::ordered_json{{"accelerator", slice.gke_accelerator},   {"topology", slice.topology},
                                {"machine_type", slice.gke_machine_type}, {"nodes", slice.gke_vms},
                                {"chips_per_node", slice.gke_chips_per_vm}, {"devices_per_node", slice.gke_devices_per_vm()}};
}

std::vector<std::string> slice_routes(const Slice& slice, const Catalog& catalog) {
  std::vector<std::string> routes;
  for (const Backend backend : {Backend::tpu_vm, Backend::gke}) {
    if (reaches(backend, slice, catalog)) {
      routes.emplace_back(to_string(backend));
    }
  }
  return routes;
}

void locate_matrix(Globals& globals) {
  if (globals.matrix_given) {
    return;
  }
  std::error_code ec;
  const std::string here = std::filesystem::current_path(ec).string();
  if (auto found = find_matrix_upward(here, k_default_matrix)) {
    globals.matrix = std::move(*found);
  } else {
    globals.matrix_searched_from = here;
  }
}

std::optional<Error> matrix_missing(const Globals& globals) {
  if (globals.matrix_searched_from.empty()) {
    return std::nullopt;
  }
  return config_error(fmt::format("no {} in {} or in any folder above it; start tpulaunch in a course's folder, or "
                                  "point at one with -C DIR or --matrix FILE ($TPULAUNCH_MATRIX) (tpulaunch init "
                                  "writes a new one)",
                                  k_default_matrix, printable(globals.matrix_searched_from)));
}

Result<Matrix> load_matrix(const Globals& globals) {
  if (auto missing = matrix_missing(globals)) {
    return *missing;
  }
  return load_matrix_file(globals.matrix);
}

namespace {

// "--slice", "-C": every name an option of `app` answers to, its option groups' included.
std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::Option* option : app.get_options()) {
    for (const auto& name : option->get_lnames()) {
      out.push_back("--" + name);
    }
    for (const auto& name : option->get_snames()) {
      out.push_back("-" + name);
    }
  }
  for (const CLI::App* group : app.get_subcommands([](const CLI::App* sub) { return sub->get_name().empty(); })) {
    const auto names = option_names(*group);
    out.insert(out.end(), names.begin(), names.end());
  }
  return out;
}

} // namespace

namespace {

// The option of `app` (its subcommands and option groups included) that takes one value and was
// given more than once, if any.
const CLI::Option* repeated_option(const CLI::App& app) {
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_items_expected_max() == 1 && option->get_expected_min() >= 1 && option->count() > 1) {
      return option;
    }
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (const CLI::Option* option = repeated_option(*sub)) {
      return option;
    }
  }
  return nullptr;
}

} // namespace

Error parse_error(const CLI::App& app, const CLI::ParseError& error) {
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) == nullptr) {
    return usage_error(error.what());
  }
  // CLI11 says "--tpu: At Most 1 required but received 2" for `--tpu a --tpu b`.
  if (const CLI::Option* option = repeated_option(app)) {
    std::vector<std::string> values;
    for (const std::string& value : option->results()) {
      values.push_back(fmt::format("'{}'", printable(value)));
    }
    return usage_error(fmt::format("{} was given {} times ({}), and it takes one value: give it once",
                                   option->get_name(), option->count(), fmt::join(values, ", ")));
  }
  // And "--python: 1 required PATH missing" for `--python` last or `--python=`.
  const std::string_view what = error.what();
  const std::size_t colon = what.find(": 1 required ");
  if (colon != std::string_view::npos && what.ends_with(" missing") && what.starts_with("-")) {
    return usage_error(
        fmt::format("{} was given no value: give one, or leave the option out for its default", what.substr(0, colon)));
  }
  return usage_error(error.what());
}

std::string refuse_empty(const std::string& value) {
  return value.empty() ? "the value is empty: give one, or leave the option out for its default" : "";
}

std::optional<Error> unknown_arguments(const CLI::App& app, const std::vector<Command>& commands) {
  // CLI11 keeps the "--" that ends the options among the words it did not take; it is not one.
  std::vector<std::string> extra = app.remaining(true);
  std::erase(extra, "--");
  const CLI::App* given = nullptr;
  for (const auto& command : commands) {
    given = command.app->parsed() ? command.app : given;
  }
  if (extra.empty()) {
    return std::nullopt;
  }
  const std::string& word = extra.front();
  if (!word.starts_with("-")) {
    if (given != nullptr) {
      return usage_error(fmt::format("{}: unexpected argument '{}'; see tpulaunch {} --help", given->get_name(),
                                     printable(word), given->get_name()));
    }
    std::vector<std::string> names;
    for (const auto& command : commands) {
      names.push_back(command.app->get_name());
    }
    return usage_error(fmt::format("unknown command '{}'{}; see tpulaunch --help", printable(word),
                                   did_you_mean(nearest_matches(word, names))));
  }
  const std::string flag = word.substr(0, word.find('='));
  std::vector<std::string> names = option_names(app);
  if (given != nullptr) {
    const auto own = option_names(*given);
    names.insert(names.begin(), own.begin(), own.end());
  }
  return usage_error(fmt::format("unknown option '{}'{}{}; see tpulaunch {}--help", printable(flag),
                                 given != nullptr ? " for " + given->get_name() : std::string(),
                                 did_you_mean(nearest_matches(flag, names, 1)),
                                 given != nullptr ? given->get_name() + " " : std::string()));
}

std::string zone_warning_line(const Catalog& catalog, std::string_view zone, const Slice& slice) {
  const auto warning = catalog.zone_warning(zone, slice);
  return warning ? fmt::format("tpulaunch: warning: {}\n", *warning) : std::string();
}

std::string exit_codes_help() {
  std::string out = "Exit codes:\n";
  for (const auto& info : k_exit_codes) {
    out += fmt::format("  {:<4}{:<12}{}\n", to_int(info.code), info.name, info.meaning);
  }
  return out;
}

std::vector<std::string> verify_kind_names(VerifyNone none) {
  std::vector<std::string> names;
  for (const VerifyKind kind : k_verify_kinds) {
    if (kind != VerifyKind::none || none == VerifyNone::included) {
      names.emplace_back(to_string(kind));
    }
  }
  return names;
}

std::string verify_kind_list(VerifyNone none) {
  const auto names = verify_kind_names(none);
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  }
  return out;
}

namespace {
constexpr std::array<std::pair<Format, std::string_view>, 7> k_format_names{{{Format::text, "text"},
                                                                             {Format::table, "table"},
                                                                             {Format::sh, "sh"},
                                                                             {Format::json, "json"},
                                                                             {Format::svg, "svg"},
                                                                             {Format::github, "github"},
                                                                             {Format::yaml, "yaml"}}};

std::string format_name(Format format) {
  for (const auto& [value, name] : k_format_names) {
    if (value == format) {
      return std::string(name);
    }
  }
  return "text";
}
} // namespace

void add_format_option(CLI::App& app, Format& format, std::initializer_list<Format> choices) {
  format = *choices.begin();
  std::vector<std::string> names;
  for (const Format choice : choices) {
    names.push_back(format_name(choice));
  }
  // The name is checked against the choices before the callback turns it into the enum, so --help
  // and the error list the names.
  app.add_option_function<std::string>(
         "--format",
         [&format, kept = std::vector<Format>(choices)](const std::string& name) {
           for (const Format choice : kept) {
             if (format_name(choice) == name) {
               format = choice;
             }
           }
         },
         "output format")
      ->check(CLI::IsMember(names))
      ->default_str(names.front());
}

namespace {

// The second group of add_tpu_options: getting the TPU, giving it back, and bounding the run.
CLI::Option_group& add_life_options(CLI::App& app, TpuArgs& args) {
  CLI::Option_group& life = *app.add_option_group("The TPU's life", "none of it happens unless asked for");
  args.tpu_only.push_back(life.add_flag(
      "--create", args.create, "create the TPU VM first (tpu-vm create --async), then wait until it is READY"));
  args.tpu_only.push_back(life.add_flag("--queued", args.queued,
                                        "ask for the TPU as a queued resource first, then wait until it is ACTIVE "
                                        "(FAILED/SUSPENDED: delete it, exit 90)"));
  args.tpu_only.push_back(
      life.add_flag("--spot", args.spot,
                    "a spot TPU (with --create/--queued: ask for one; alone: the TPU is one, so a failed "
                    "step asks whether it was preempted)"));
  args.tpu_only.push_back(
      life.add_flag("--preemptible", args.preemptible, "a preemptible TPU (tpu-vm create only), as --spot"));
  args.tpu_only.push_back(
      life.add_flag("--reserved", args.reserved, "use reserved capacity (with --create or --queued)"));
  args.tpu_only.push_back(
      life.add_flag("--guaranteed", args.guaranteed, "a guaranteed queued resource (with --queued)"));
  args.tpu_only.push_back(life.add_flag(
      "--internal-ips", args.lifecycle.internal_ips,
      "with --create/--queued: workers without external addresses (gcloud's --internal-ips); reached from inside "
      "the VPC network or with --tunnel-through-iap"));
  args.tpu_only.push_back(
      life.add_option("--runtime-version", args.lifecycle.runtime_version,
                      "the TPU software version to create with (default: the catalog's for the slice)"));
  args.tpu_only.push_back(life.add_option("--queued-resource", args.lifecycle.queued_resource,
                                          "the queued resource's ID (default: <tpu>-qr)"));
  args.tpu_only.push_back(
      life.add_option("--valid-until-duration", args.valid_until,
                      "how long the queued resource may wait for capacity, e.g. 6h (gcloud's own flag)"));
  args.tpu_only.push_back(life.add_option(
      "--ready-timeout", args.ready_timeout,
      "how long to wait for READY/ACTIVE (default 30m with --create, 12h with --queued; then exit 91)"));
  args.tpu_only.push_back(life.add_option(
      "--poll", args.poll, "how often to ask for the state (default 15s with --create, 60s with --queued)"));
  args.tpu_only.push_back(
      life.add_option("--timeout", args.timeout,
                      "bound the program on every worker, e.g. 2h: SIGTERM, then SIGKILL after --grace; status 124"));
  args.tpu_only.push_back(
      life.add_option("--grace", args.grace, "from SIGTERM to SIGKILL, for --timeout and --kill-stale")
          ->default_str("30s"));
  args.tpu_only.push_back(life.add_flag(
      "--kill-stale", args.lifecycle.kill_stale,
      "end the processes that hold the TPU devices or libtpu's lock (SIGTERM, wait, SIGKILL) instead of refusing"));
  return life;
}

} // namespace

void add_tpu_options(CLI::App& app, TpuArgs& args) {
  // Two option groups, which --help shows under their own headings. CLI11 checks a new option's
  // names against every option of its group, so groups also keep that check short: it was a
  // fifth of a whole plan's instructions with all of them in one list.
  CLI::Option_group& tpu = *app.add_option_group("TPU VM", "where the script runs, and what comes back");
  // $TPU_NAME is read in plan_options, not by CLI11, so that a --tpu given on the CPU route can be
  // told from one in the environment.
  args.tpu_only.push_back(tpu.add_option("--tpu", args.tpu, "TPU VM name (default: $TPU_NAME)")->check(refuse_empty));
  tpu.add_option("--zone", args.zone, "zone, e.g. us-central1-a")->envname("CLOUDSDK_COMPUTE_ZONE");
  tpu.add_option("--project", args.project, "project ID; --project= is emitted only when given")
      ->envname("CLOUDSDK_CORE_PROJECT");
  tpu.add_option("--run-id", args.run_id, "run id (default: the UTC time, so runs never overwrite each other)")
      ->check(refuse_empty);
  tpu.add_option("--python", args.python,
                 "the interpreter: on each worker (default ~/jax-tpu-lab/.venv/bin/python; a leading ~/ is the "
                 "worker's home), or here on the CPU route (default python3)")
      ->type_name("PATH")
      ->check(refuse_empty);
  args.tpu_only.push_back(tpu.add_flag("--bootstrap", args.bootstrap,
                                       "create ~/jax-tpu-lab/.venv and install jax[tpu] on every worker first"));
  args.tpu_only.push_back(
      tpu.add_flag("--teardown", args.teardown, "delete the TPU VM at the end, only after fetch and verify succeed"));
  args.tpu_only.push_back(
      tpu.add_flag("--internal-ip", args.internal_ip,
                   "every ssh and scp reaches the workers' internal addresses (from inside the TPU's VPC network)"));
  args.tpu_only.push_back(tpu.add_flag("--tunnel-through-iap", args.tunnel_through_iap,
                                       "every ssh and scp goes through Identity-Aware Proxy (the plan's notes "
                                       "say what it needs; docs/private-network.md)"));
  args.tpu_only.push_back(tpu.add_option("--parallel", args.parallel, "fetches in flight at once")
                              ->default_val(8)
                              ->check(CLI::Range(1, 1024)));
  args.tpu_only.push_back(
      tpu.add_option("--results", args.results,
                     "gs://BUCKET[/PREFIX]: each worker uploads its run folder there at the end of the run, and one "
                     "download brings every worker's back (3 local gcloud calls for any slice)"));

  // CLI11 stops option groups from falling through to their subcommand when parsing starts
  // (App::_configure); these are made later, when the command line names the subcommand, so they
  // are stopped here: a group that falls through hands an unknown word back to its subcommand,
  // which hands it to the group again, without end.
  tpu.fallthrough(false);
  add_life_options(app, args).fallthrough(false);
}

std::string own_path() {
  std::error_code ec;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec || path.empty() ? std::string("tpulaunch") : path.string();
}

std::vector<std::string> given_flags(const TpuArgs& args) {
  std::vector<std::string> given;
  for (const CLI::Option* option : args.tpu_only) {
    if (option->count() > 0) {
      given.push_back(option->get_name());
    }
  }
  return given;
}

Result<PlanOptions> plan_options(const TpuArgs& args, const Globals& globals, WithMatrix with_matrix) {
  namespace fs = std::filesystem;
  // The rules between these flags are the core's (plan/request.hpp), on the names given.
  TPULAUNCH_CHECK(check_exclusive_flags(given_flags(args)));
  PlanOptions options;
  options.connection = args.internal_ip          ? Connection::internal_ip
                       : args.tunnel_through_iap ? Connection::iap
                                                 : Connection::external;
  options.lifecycle = args.lifecycle;
  // Each duration is checked once, here, where its text becomes a Duration.
  for (const auto& [text, kind, duration] :
       {std::tuple{&args.valid_until, ValueKind::valid_until, &options.lifecycle.valid_until},
        std::tuple{&args.ready_timeout, ValueKind::ready_timeout, &options.lifecycle.ready_timeout},
        std::tuple{&args.poll, ValueKind::poll, &options.lifecycle.poll},
        std::tuple{&args.timeout, ValueKind::timeout, &options.lifecycle.timeout},
        std::tuple{&args.grace, ValueKind::grace, &options.lifecycle.grace}}) {
    if (!text->empty()) {
      TPULAUNCH_TRY(*duration, Duration::parse(kind, *text));
    }
  }
  options.lifecycle.capacity = args.create ? Capacity::create : args.queued ? Capacity::queued : Capacity::existing;
  options.lifecycle.provisioning = args.spot          ? Provisioning::spot
                                   : args.preemptible ? Provisioning::preemptible
                                   : args.reserved    ? Provisioning::reserved
                                   : args.guaranteed  ? Provisioning::guaranteed
                                                      : Provisioning::standard;
  options.tpu = args.tpu;
  if (const char* name = std::getenv("TPU_NAME"); options.tpu.empty() && name != nullptr) {
    options.tpu = name;
  }
  options.python = args.python;
  std::error_code ec;
  options.directory = fs::current_path(ec).string(); // main has already changed to -C DIR
  if (with_matrix == WithMatrix::yes) {
    options.matrix_file = fs::absolute(globals.matrix, ec).lexically_normal().string();
  }
  if (!globals.catalog.empty()) {
    options.catalog_file = fs::absolute(globals.catalog, ec).lexically_normal().string();
  }
  options.tpulaunch_program = own_path();
  options.zone = args.zone;
  options.project = args.project;
  options.run_id = args.run_id.empty() ? default_run_id() : args.run_id;
  options.parallel = args.parallel;
  options.bootstrap = args.bootstrap;
  options.teardown = args.teardown;
  options.results = args.results;
  return options;
}

} // namespace tpulaunch::cli
