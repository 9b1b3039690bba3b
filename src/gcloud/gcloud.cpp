#include "tpulaunch/gcloud/gcloud.hpp"

namespace tpulaunch::gcloud {
namespace {

// gcloud [alpha] compute tpus <group> <verb>: the IAP tunnel is on the alpha track only.
ShellLine command(std::string_view group, std::string_view verb, Connection connection = Connection::external) {
  ShellLine line{"gcloud"};
  if (connection == Connection::iap) {
    line.word("alpha");
  }
  line.word("compute").word("tpus").word(std::string(group)).word(std::string(verb));
  return line;
}

Word flag(std::string_view name, std::string value) { return Word(std::string(name) + "=").append(std::move(value)); }
Word flag(std::string_view name, const Word& value) {
  return Word(std::string(name) + "=").append(value);
}

// --project=P, only when a project was given (gcloud otherwise uses its configured one).
void add_project(ShellLine& line, const Location& at) {
  if (!at.project.empty()) {
    line.word(flag("--project", at.project));
  }
}

// --zone=Z, then --worker=W when one is named (gcloud's default is worker 0), then --project=P.
void add_location(ShellLine& line, const Location& at, const std::optional<Word>& worker) {
  line.word(flag("--zone", at.zone));
  if (worker) {
    line.word(flag("--worker", *worker));
  }
  add_project(line, at);
}

void add_location(ShellLine& line, const Location& at, const std::optional<std::string>& worker) {
  add_location(line, at, worker ? std::optional<Word>(Word(*worker)) : std::nullopt);
}

void add_connection(ShellLine& line, Connection connection) {
  switch (connection) {
  case Connection::external: break;
  case Connection::internal_ip: line.word("--internal-ip"); break;
  case Connection::iap: line.word("--tunnel-through-iap"); break;
  }
}

// --metadata=tpulaunch_run=MARK: the mark of capacity the plan creates.
void add_mark(ShellLine& line, const std::string& mark) {
  if (!mark.empty()) {
    line.word(flag("--metadata", std::string(k_mark_key) + "=" + mark));
  }
}

void add_provisioning(ShellLine& line, Provisioning provisioning) {
  switch (provisioning) {
  case Provisioning::standard: break;
  case Provisioning::spot: line.word("--spot"); break;
  case Provisioning::preemptible: line.word("--preemptible"); break;
  case Provisioning::reserved: line.word("--reserved"); break;
  case Provisioning::guaranteed: line.word("--guaranteed"); break;
  }
}

} // namespace

std::string_view to_string(Provisioning provisioning) {
  switch (provisioning) {
  case Provisioning::standard: return "standard";
  case Provisioning::spot: return "spot";
  case Provisioning::preemptible: return "preemptible";
  case Provisioning::reserved: return "reserved";
  case Provisioning::guaranteed: return "guaranteed";
  }
  return "standard";
}

std::string_view to_string(Connection connection) {
  switch (connection) {
  case Connection::external:
    return "external";
  case Connection::internal_ip:
    return "internal-ip";
  case Connection::iap:
    return "tunnel-through-iap";
  }
  return "external";
}

std::optional<Connection> connection_from(std::string_view name) {
  for (const Connection connection : {Connection::external, Connection::internal_ip, Connection::iap}) {
    if (to_string(connection) == name) {
      return connection;
    }
  }
  return std::nullopt;
}

std::string_view connection_note(Connection connection) {
  switch (connection) {
  case Connection::external:
    return "";
  case Connection::internal_ip:
    return "--internal-ip: every ssh and scp goes to the workers' internal addresses, so the machine running "
           "this plan needs a route into the TPU's VPC network (the same or a peered network, or a VPN or "
           "Interconnect into it) and a firewall rule that lets it reach tcp:22 on the workers";
  case Connection::iap:
    return "--tunnel-through-iap: gcloud has it for tpu-vm ssh and scp on its alpha track only, so those calls "
           "are `gcloud alpha compute tpus tpu-vm ...` (the google-cloud-cli package includes alpha; an SDK from "
           "the archive needs `gcloud components install alpha`); IAP needs a firewall rule allowing ingress from "
           "35.235.240.0/20 to tcp:22 on the TPU VMs, and the IAP-Secured Tunnel User role "
           "(roles/iap.tunnelResourceAccessor) for whoever runs the plan";
  }
  return "";
}

std::string local_path(const std::string& path) {
  const auto colon = path.find(':');
  const bool reads_as_remote = colon != std::string::npos && path.substr(0, colon).find('/') == std::string::npos;
  if (!path.starts_with('/') && !path.starts_with("./") && (path.starts_with('-') || reads_as_remote)) {
    return "./" + path;
  }
  return path;
}

Word on_node(std::string_view node, const Word& path) { return Word(std::string(node) + ":").append(path); }

ShellLine tpu_vm_ssh(const TpuVmSsh& call) {
  ShellLine line = command("tpu-vm", "ssh", call.connection);
  line.word(call.node);
  add_location(line, call.at, call.worker);
  add_connection(line, call.connection);
  line.word(flag("--command", to_shell(call.command)));
  return line;
}

ShellLine tpu_vm_scp(const TpuVmScp& call) {
  ShellLine line = command("tpu-vm", "scp", call.connection);
  if (call.recurse) {
    line.word("--recurse");
  }
  line.words(call.sources).word(call.destination);
  add_location(line, call.at, call.worker);
  add_connection(line, call.connection);
  return line;
}

ShellLine tpu_vm_create(const TpuVmCreate& call) {
  ShellLine line = command("tpu-vm", "create");
  line.word(call.node).word(flag("--zone", call.at.zone)).word(flag("--accelerator-type", call.accelerator_type))
      .word(flag("--version", call.version));
  add_provisioning(line, call.provisioning);
  if (call.async) {
    line.word("--async");
  }
  if (call.internal_ips) {
    line.word("--internal-ips");
  }
  add_mark(line, call.mark);
  add_project(line, call.at);
  return line;
}

ShellLine tpu_vm_describe(const TpuVmDescribe& call) {
  ShellLine line = command("tpu-vm", "describe");
  line.word(call.node).word(flag("--zone", call.at.zone)).word(flag("--format", call.format));
  add_project(line, call.at);
  return line;
}

ShellLine tpu_vm_delete(const TpuVmDelete& call) {
  ShellLine line = command("tpu-vm", "delete");
  line.word(call.node).word(flag("--zone", call.at.zone)).word("--quiet");
  add_project(line, call.at);
  return line;
}

ShellLine queued_create(const QueuedCreate& call) {
  ShellLine line = command("queued-resources", "create");
  line.word(call.queued_resource);
  if (call.node_count > 1) {
    line.word(flag("--node-count", std::to_string(call.node_count))).word(flag("--node-prefix", call.node));
  } else {
    line.word(flag("--node-id", call.node));
  }
  line.word(flag("--zone", call.at.zone))
      .word(flag("--accelerator-type", call.accelerator_type))
      .word(flag("--runtime-version", call.runtime_version));
  add_provisioning(line, call.provisioning);
  if (!call.valid_until.empty()) {
    line.word(flag("--valid-until-duration", call.valid_until));
  }
  if (call.internal_ips) {
    line.word("--internal-ips");
  }
  add_mark(line, call.mark);
  add_project(line, call.at);
  return line;
}

ShellLine queued_describe(const QueuedDescribe& call) {
  ShellLine line = command("queued-resources", "describe");
  line.word(call.queued_resource).word(flag("--zone", call.at.zone)).word(flag("--format", call.format));
  add_project(line, call.at);
  return line;
}

ShellLine queued_delete(const QueuedDelete& call) {
  ShellLine line = command("queued-resources", "delete");
  line.word(call.queued_resource).word(flag("--zone", call.at.zone)).word("--force").word("--quiet");
  add_project(line, call.at);
  return line;
}

ShellLine storage_cp(const StorageCp& call) {
  ShellLine line{"gcloud", "storage", "cp"};
  if (call.recursive) {
    line.word("--recursive");
  }
  line.word(call.source).word(call.destination);
  return line;
}

ShellLine container_get_credentials(const ClusterCredentials& call) {
  ShellLine line{"gcloud", "container", "clusters", "get-credentials", Word(call.cluster)};
  line.word(flag("--location", call.location));
  if (!call.project.empty()) {
    line.word(flag("--project", call.project));
  }
  return line;
}

} // namespace tpulaunch::gcloud
