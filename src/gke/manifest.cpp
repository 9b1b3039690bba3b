#include "tpulaunch/gke/manifest.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "tpulaunch/util/utf8.hpp"

namespace tpulaunch::gke {
namespace {

using Json = nlohmann::ordered_json;

// The largest object the Kubernetes API stores (etcd's request limit, which ConfigMap's
// documentation gives as 1 MiB).
constexpr std::size_t k_max_config_map_bytes = 1024U * 1024U;

bool lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool alnum(char c) { return lower_alnum(c) || (c >= 'A' && c <= 'Z'); }

// RFC 1123 label as Kubernetes checks names and namespaces: lower case alphanumerics and '-',
// alphanumeric at both ends, at most 63. `letter_first` adds RFC 1035's leading letter.
bool is_dns_label(std::string_view value, bool letter_first) {
  if (value.empty() || value.size() > 63 || !lower_alnum(value.front()) || !lower_alnum(value.back()) ||
      (letter_first && !(value.front() >= 'a' && value.front() <= 'z'))) {
    return false;
  }
  return std::all_of(value.begin(), value.end(), [](char c) { return lower_alnum(c) || c == '-'; });
}

// A label value: empty, or at most 63 of [-_.a-zA-Z0-9] with alphanumerics at both ends.
bool is_label_value(std::string_view value) {
  if (value.empty()) {
    return true;
  }
  return value.size() <= 63 && alnum(value.front()) && alnum(value.back()) &&
         std::all_of(value.begin(), value.end(), [](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

// A label key: [prefix/]name, the prefix a DNS subdomain of at most 253, the name as a value but
// not empty.
bool is_label_key(std::string_view key) {
  const auto slash = key.find('/');
  const std::string_view name = slash == std::string_view::npos ? key : key.substr(slash + 1);
  if (name.empty() || !is_label_value(name)) {
    return false;
  }
  if (slash == std::string_view::npos) {
    return true;
  }
  const std::string_view prefix = key.substr(0, slash);
  return !prefix.empty() && prefix.size() <= 253 && lower_alnum(prefix.front()) && lower_alnum(prefix.back()) &&
         std::all_of(prefix.begin(), prefix.end(), [](char c) { return lower_alnum(c) || c == '-' || c == '.'; });
}

// An environment variable name as the API server takes it: [-._a-zA-Z][-._a-zA-Z0-9]*.
bool is_env_name(std::string_view name) {
  const auto allowed = [](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; };
  return !name.empty() && !(name.front() >= '0' && name.front() <= '9') && std::all_of(name.begin(), name.end(), allowed);
}

// A ConfigMap key: [-._a-zA-Z0-9]+, at most 253, not "." or "..".
bool is_config_map_key(std::string_view key) {
  return !key.empty() && key.size() <= 253 && key != "." && key != ".." &&
         std::all_of(key.begin(), key.end(), [](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

Error bad(std::string_view what, std::string_view value, std::string_view rule) {
  return usage_error(fmt::format("{} '{}' {}", what, printable(value), rule));
}

Status check_labels(const Pairs& labels) {
  for (const auto& [key, value] : labels) {
    if (!is_label_key(key)) {
      return bad("label key", key, "is not a Kubernetes label key ([prefix/]name, the name at most 63 of [-_.a-zA-Z0-9])");
    }
    if (!is_label_value(value)) {
      return bad("label value", value, "is not a Kubernetes label value (at most 63 of [-_.a-zA-Z0-9], alphanumeric at both ends)");
    }
  }
  return Ok{};
}

Json labels_json(const Pairs& labels) {
  Json object = Json::object();
  for (const auto& [key, value] : labels) {
    object[key] = value;
  }
  return object;
}

// What the JobSet needs of its own values before anything is built.
Status check_jobset(const JobSetSpec& spec) {
  if (spec.slice == nullptr || !spec.slice->on_gke()) {
    return usage_error(fmt::format("slice '{}' has no GKE facts in the catalog: no JobSet can be built for it",
                                   spec.slice == nullptr ? std::string("(none)") : printable(spec.slice->name)));
  }
  if (spec.slices < 1) {
    return usage_error(fmt::format("a JobSet needs at least one slice, not {}", spec.slices));
  }
  if (!is_dns_label(spec.name, true)) {
    return bad("JobSet name", spec.name, "is not a DNS-1035 label (a lowercase letter, then lowercase letters, digits and '-', at most 63)");
  }
  if (const std::string longest = pod_hostname(spec.name, spec.slices - 1, spec.slice->gke_vms - 1); longest.size() > 63) {
    return bad("JobSet name", spec.name, fmt::format("makes pod host names such as '{}' longer than 63 characters", longest));
  }
  if (!is_dns_label(spec.name_space, false)) {
    return bad("namespace", spec.name_space, "is not a DNS-1123 label");
  }
  if (!is_dns_label(spec.config_map, false)) {
    return bad("ConfigMap name", spec.config_map, "is not a DNS-1123 label");
  }
  if (spec.mount_path.empty() || spec.mount_path.front() != '/' || spec.mount_path.find(':') != std::string::npos) {
    return bad("mount path", spec.mount_path, "is not an absolute path without ':'");
  }
  if (spec.image.empty() || spec.argv.empty() || spec.argv.front().empty()) {
    return usage_error("a JobSet needs an image and a command");
  }
  for (const auto& [name, value] : spec.env) {
    if (!is_env_name(name)) {
      return bad("environment name", name, "is not one Kubernetes takes ([-._a-zA-Z][-._a-zA-Z0-9]*)");
    }
  }
  return check_labels(spec.labels);
}

// The pod of one worker: the TPU node it needs and the container that runs the command.
Json pod_template(const JobSetSpec& spec) {
  const Slice& slice = *spec.slice;
  Json env = Json::array();
  for (const auto& [name, value] : spec.env) {
    env.push_back(Json{{"name", name}, {"value", value}});
  }
  Json container = {
      {"name", k_container},
      {"image", spec.image},
      {"command", spec.argv},
      {"env", std::move(env)},
      {"resources", {{"limits", {{k_tpu_resource, slice.gke_chips_per_vm}}}}},
      {"volumeMounts", Json::array({Json{{"name", k_files_volume}, {"mountPath", spec.mount_path}, {"readOnly", true}}})},
  };
  return Json{
      {"metadata", {{"labels", labels_json(spec.labels)}}},
      {"spec",
       {{"restartPolicy", "Never"},
        {"terminationGracePeriodSeconds", spec.termination_grace_seconds},
        {"nodeSelector", {{k_accelerator_label, slice.gke_accelerator}, {k_topology_label, slice.topology}}},
        {"tolerations", Json::array({Json{{"key", k_tpu_resource}, {"operator", "Exists"}, {"effect", "NoSchedule"}}})},
        {"containers", Json::array({std::move(container)})},
        {"volumes", Json::array({Json{{"name", k_files_volume}, {"configMap", {{"name", spec.config_map}}}}})}}},
  };
}

} // namespace

std::string pod_hostname(std::string_view name, int slice, int worker) {
  return fmt::format("{}-{}-{}-{}", name, k_replicated_job, slice, worker);
}

Result<nlohmann::ordered_json> jobset_manifest(const JobSetSpec& spec) {
  TPULAUNCH_CHECK(check_jobset(spec));
  const int pods = spec.slice->gke_vms;
  Json job = {{"parallelism", pods}, {"completions", pods}, {"backoffLimit", 0}, {"template", pod_template(spec)}};
  Json replicated = {{"name", k_replicated_job}, {"replicas", spec.slices}, {"template", {{"spec", std::move(job)}}}};
  return Json{
      {"apiVersion", "jobset.x-k8s.io/v1alpha2"},
      {"kind", "JobSet"},
      {"metadata",
       {{"name", spec.name},
        {"namespace", spec.name_space},
        {"labels", labels_json(spec.labels)},
        {"annotations", {{k_exclusive_topology, k_node_pool_label}}}}},
      {"spec", {{"failurePolicy", {{"maxRestarts", 0}}}, {"replicatedJobs", Json::array({std::move(replicated)})}}},
  };
}

Result<nlohmann::ordered_json> config_map_manifest(const ConfigMapSpec& spec) {
  if (!is_dns_label(spec.name, false)) {
    return bad("ConfigMap name", spec.name, "is not a DNS-1123 label");
  }
  if (!is_dns_label(spec.name_space, false)) {
    return bad("namespace", spec.name_space, "is not a DNS-1123 label");
  }
  TPULAUNCH_CHECK(check_labels(spec.labels));
  Json data = Json::object();
  std::size_t bytes = 0;
  for (const auto& [name, text] : spec.files) {
    if (!is_config_map_key(name)) {
      return bad("file name", name, "is not a ConfigMap key ([-._a-zA-Z0-9]+, at most 253, not '.' or '..')");
    }
    if (auto status = check_utf8_text(text, name, "a file for the ConfigMap"); !status) {
      return usage_error(status.error().message);
    }
    bytes += name.size() + text.size();
    data[name] = text;
  }
  if (bytes > k_max_config_map_bytes) {
    return usage_error(fmt::format("ConfigMap '{}' would hold {} bytes of files, more than the 1 MiB (1048576 bytes) "
                                   "Kubernetes stores in one object",
                                   printable(spec.name), bytes));
  }
  return Json{{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata", {{"name", spec.name}, {"namespace", spec.name_space}, {"labels", labels_json(spec.labels)}}},
              {"data", std::move(data)}};
}

} // namespace tpulaunch::gke
