#pragma once
// The Kubernetes objects of a run on GKE, built as JSON documents from typed values (kubectl
// applies JSON; nothing here writes JSON text by hand): a JobSet (jobset.x-k8s.io/v1alpha2) whose
// one replicated job runs every pod of every slice, and the ConfigMap that carries the staged
// files. Every TPU value (node labels, pods per slice, chips per pod) comes from the catalog row.
// docs/gke.md gives each field with its public source.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tpulaunch/catalog/catalog.hpp"
#include "tpulaunch/util/error.hpp"

namespace tpulaunch::gke {

// The name of the JobSet's one replicated job: pods are named
// <jobset>-slice-<slice index>-<worker index>-<suffix>.
inline constexpr std::string_view k_replicated_job = "slice";
// The container's name in every pod, and the volume that holds the ConfigMap's files.
inline constexpr std::string_view k_container = "tpulaunch";
inline constexpr std::string_view k_files_volume = "tpulaunch-files";

// Label and annotation keys the manifest sets, spelled once.
inline constexpr std::string_view k_accelerator_label = "cloud.google.com/gke-tpu-accelerator";
inline constexpr std::string_view k_topology_label = "cloud.google.com/gke-tpu-topology";
inline constexpr std::string_view k_tpu_resource = "google.com/tpu";
inline constexpr std::string_view k_exclusive_topology = "alpha.jobset.sigs.k8s.io/exclusive-topology";
inline constexpr std::string_view k_node_pool_label = "cloud.google.com/gke-nodepool";

using Pairs = std::vector<std::pair<std::string, std::string>>;

struct JobSetSpec {
  std::string name;               // the JobSet's name: a DNS-1035 label, short enough for its pods' host names
  std::string name_space;         // "default"
  const Slice* slice = nullptr;   // a catalog row with GKE facts (Slice::on_gke())
  int slices = 1;                 // replicas of the replicated job: 1, or the Multislice count
  std::string image;              // the container image
  std::vector<std::string> argv;  // the container's command (no shell: exactly these words)
  Pairs env;                      // the container's environment, in this order
  std::string config_map;         // the ConfigMap holding the staged files
  std::string mount_path;         // where its files appear in the container, e.g. "/tpulaunch"
  Pairs labels;                   // on the JobSet and on every pod
  int termination_grace_seconds = 30; // the pod's terminationGracePeriodSeconds (Kubernetes' default: 30)
};

// The JobSet for `spec`: one replicated job "slice" with replicas = spec.slices, each Job with
// parallelism = completions = the slice's GKE nodes and backoffLimit 0, pods with restartPolicy
// Never, the node selector of the slice's accelerator and topology, a google.com/tpu limit of the
// node's chips and its toleration, the ConfigMap mounted read-only at mount_path, and the
// exclusive-topology annotation (one slice per node pool). A usage Error, naming the value, for
// a slice without GKE facts, slices < 1, an empty image or argv, a name that is not a DNS label
// (or makes a pod host name longer than 63), a label or environment name Kubernetes refuses.
Result<nlohmann::ordered_json> jobset_manifest(const JobSetSpec& spec);

struct ConfigMapSpec {
  std::string name;
  std::string name_space;
  std::map<std::string, std::string> files; // file name (a ConfigMap key) -> UTF-8 text
  Pairs labels;
};

// The ConfigMap (v1) whose `data` holds each file under its name. A usage Error for a name that
// is not a ConfigMap key ([-._a-zA-Z0-9]+, at most 253, not "." or ".."), a file that is not
// UTF-8 text (binaryData is not used), or more than the 1 MiB Kubernetes takes in one object.
Result<nlohmann::ordered_json> config_map_manifest(const ConfigMapSpec& spec);

// The host name of worker `worker` of slice `slice` in JobSet `name` (JobSet's DNS hostnames:
// <jobset>-<replicated job>-<job index>-<pod index>), as TPU_WORKER_HOSTNAMES lists them.
std::string pod_hostname(std::string_view name, int slice, int worker);

} // namespace tpulaunch::gke
