#pragma once
// gcloud's grammar, in one place: each gcloud command tpulaunch emits is built here by one
// function, from typed values, as argv data (a ShellLine) that the one quoting function renders.
// Nothing else in the binary spells "gcloud", a command group or a flag of it (the run guard, a
// bash program on the worker, calls `gcloud storage cp` itself for --results). The order of the
// words is the one the plans have always shown (and the real gcloud 528 accepts: tests/real-gcloud).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tpulaunch/shell/shell.hpp"

namespace tpulaunch::gcloud {

// How the TPU is provisioned, as gcloud's create flags name it: --spot, --preemptible (tpu-vm
// create only), --reserved, --guaranteed (queued-resources create only); standard: no flag.
enum class Provisioning { standard, spot, preemptible, reserved, guaranteed };
std::string_view to_string(Provisioning provisioning);

// How ssh and scp reach the workers: their external addresses (gcloud's default), their internal
// ones (--internal-ip, from inside the VPC), or through Identity-Aware Proxy (--tunnel-through-iap,
// on gcloud's alpha track only). docs/private-network.md has the facts.
enum class Connection { external, internal_ip, iap };
// What a plan's reader needs before ssh and scp can reach the workers this way (a preflight note),
// and which gcloud track the calls use; empty for the external addresses.
std::string_view connection_note(Connection connection);
// The flag's name without its dashes ("internal-ip", "tunnel-through-iap"), or "external": how a
// plan record and the JSON form name the connection.
std::string_view to_string(Connection connection);
// The connection a name of to_string names; nullopt for any other text.
std::optional<Connection> connection_from(std::string_view name);

// What every call names: the zone, and the project (empty: gcloud's configured one, no flag).
struct Location {
  std::string zone;
  std::string project;
};

// tpu-vm ssh NODE --zone=Z [--worker=W] [--project=P] [--internal-ip|--tunnel-through-iap]
// --command=TEXT. The remote command is rendered to text here; that text is one literal argument
// for the local shell, quoted again by the same function (docs/security.md, "two shell levels").
struct TpuVmSsh {
  std::string node;
  Location at;
  std::optional<std::string> worker; // "all" or an index; nullopt: gcloud's default, worker 0
  ShellLine command;
  Connection connection = Connection::external;
};
ShellLine tpu_vm_ssh(const TpuVmSsh& call);

// tpu-vm scp [--recurse] SOURCE... DESTINATION --zone=Z [--worker=W] [--project=P] [connection].
// `sources` and `destination` are made with `local_path` and `on_node`.
struct TpuVmScp {
  std::vector<Word> sources;
  Word destination;
  bool recurse = false;
  Location at;
  // --worker=: an index, or (a fetch written once for a slice's workers) a word that expands to one.
  std::optional<Word> worker;
  Connection connection = Connection::external;
};
ShellLine tpu_vm_scp(const TpuVmScp& call);

// A local path as an scp argument: gcloud reads a word starting with '-' as an option, and one
// with a ':' before any '/' as a file on a remote host ([[USER@]INSTANCE:]SRC), so such paths get
// "./". The usual "public/exercises/x.py" stays as written.
std::string local_path(const std::string& path);
// NODE:PATH, a path on the node's workers (PATH relative to the worker's home, or home_path's).
Word on_node(std::string_view node, const Word& path);

// The metadata key of the mark a plan sets on capacity it creates (--metadata=tpulaunch_run=MARK),
// and the describe format that prints it (an empty line for a TPU without it).
inline constexpr std::string_view k_mark_key = "tpulaunch_run";
inline constexpr std::string_view k_mark_format = "value(metadata.tpulaunch_run)";

// tpu-vm create NODE --zone=Z --accelerator-type=T --version=V [provisioning] [--async]
// [--internal-ips] [--metadata=tpulaunch_run=MARK] [--project=P]. With --async gcloud returns at once; the plan's wait step polls instead.
struct TpuVmCreate {
  std::string node;
  Location at;
  std::string accelerator_type;
  std::string version;
  Provisioning provisioning = Provisioning::standard;
  bool async = false;
  bool internal_ips = false; // workers without external addresses
  std::string mark{};        // the plan's mark (k_mark_key); empty: none
};
ShellLine tpu_vm_create(const TpuVmCreate& call);

// tpu-vm describe NODE --zone=Z --format=F [--project=P]
struct TpuVmDescribe {
  std::string node;
  Location at;
  std::string format; // e.g. "value(state)"
};
ShellLine tpu_vm_describe(const TpuVmDescribe& call);

// tpu-vm delete NODE --zone=Z --quiet [--project=P]
struct TpuVmDelete {
  std::string node;
  Location at;
};
ShellLine tpu_vm_delete(const TpuVmDelete& call);

// queued-resources create QR (--node-id=NODE | --node-count=N --node-prefix=NODE) --zone=Z
// --accelerator-type=T --runtime-version=V [provisioning] [--valid-until-duration=D] [--internal-ips]
// [--project=P].
// With a node count (Multislice) the nodes are NODE-0 ... NODE-(N-1); gcloud refuses a count of 1.
struct QueuedCreate {
  std::string queued_resource;
  std::string node; // the node's name, or with node_count > 1 the nodes' prefix
  Location at;
  std::string accelerator_type;
  std::string runtime_version;
  Provisioning provisioning = Provisioning::standard;
  std::string valid_until; // empty: no flag
  int node_count = 1;      // > 1: --node-count=N --node-prefix=NODE in place of --node-id=NODE
  bool internal_ips = false; // workers without external addresses
  std::string mark{};        // the plan's mark (k_mark_key); empty: none
};
ShellLine queued_create(const QueuedCreate& call);

// queued-resources describe QR --zone=Z --format=F [--project=P]
struct QueuedDescribe {
  std::string queued_resource;
  Location at;
  std::string format; // e.g. "value(state.state)"
};
ShellLine queued_describe(const QueuedDescribe& call);

// queued-resources delete QR --zone=Z --force --quiet [--project=P]: --force deletes its node too.
struct QueuedDelete {
  std::string queued_resource;
  Location at;
};
ShellLine queued_delete(const QueuedDelete& call);

// storage cp [--recursive] SOURCE DESTINATION
struct StorageCp {
  std::string source;
  std::string destination;
  bool recursive = false;
};
ShellLine storage_cp(const StorageCp& call);

// container clusters get-credentials CLUSTER --location=LOC [--project=P]: the kubeconfig entry
// kubectl then uses (the GKE backend's first step).
struct ClusterCredentials {
  std::string cluster;
  std::string location; // a zone or a region
  std::string project;  // empty: gcloud's configured one
};
ShellLine container_get_credentials(const ClusterCredentials& call);

} // namespace tpulaunch::gcloud
