"""The workers of fakecloud.py's nodes: one real OpenSSH sshd per worker, each in its own mount
and UTS namespaces (`unshare`, as root) on 127.0.0.N:22, with the worker's home folder mounted
over /root.  For tests/real-gcloud only; nothing here is a TPU VM."""

import os
import shutil
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True
from standin import vm  # noqa: E402  (the gcloud stand-in's package: put on sys.path by fakecloud.py)
from standin.state import Node  # noqa: E402

PROG = "fakecloud"
SSHD = shutil.which("sshd", path="/usr/sbin:/usr/bin:/sbin:/bin") or "/usr/sbin/sshd"
# Variables sshd sets itself for the login; the rest of the stand-in's worker environment
# goes to the worker's sshd as SetEnv.
SSHD_OWN = {"HOME", "PWD", "USER", "LOGNAME", "SHELL"}


# --------------------------------------------------------------------------
# Workers: one sshd per worker.
# --------------------------------------------------------------------------

class Workers:
    """The sshd processes of one node, by worker index."""

    def __init__(self, cloud, name, node_root, base):
        self.cloud, self.name, self.root, self.base = cloud, name, node_root, base
        self.procs = {}             # worker -> its sshd
        self.markers = {}           # worker -> the environment entries its processes carry

    def address(self, worker):
        return "127.0.0.{}".format(self.base + worker)

    def start(self, config):
        node = Node(self.root, self.name, config)
        for worker in range(node.workers):
            self.start_one(node, worker)
        for worker in range(node.workers):
            self.wait_listening(worker)
        # Knobs for the life of a run (a busy TPU, a stale lock) apply before any command.
        vm.prepare_workers(PROG, node, list(range(node.workers)))

    def start_one(self, node, worker):
        folder = self.cloud.ssh_dir / "{}-w{}".format(self.name, worker)
        folder.mkdir(parents=True, exist_ok=True)
        env, bash = vm.remote_env(node, worker, "root")
        lines = [
            "ListenAddress {}:22".format(self.address(worker)),
            "HostKey {}".format(self.cloud.host_key),
            "PidFile none",
            "AuthorizedKeysFile {}".format(self.cloud.pubkey),
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "PrintMotd no",
            "PrintLastLog no",
            "MaxStartups 64",
            "MaxSessions 64",
            "LogLevel ERROR",
            "Subsystem sftp internal-sftp",
        ]
        setenv = []
        for key, value in sorted(env.items()):
            if key in SSHD_OWN:
                continue
            if any(c in value for c in '"\\\n'):
                raise SystemExit("{}: {}={!r} cannot be an sshd SetEnv value".format(PROG, key, value))
            setenv.append('"{}={}"'.format(key, value))
        # sshd takes the first SetEnv line only: every variable goes on that one.
        lines.append("SetEnv " + " ".join(setenv))
        config_file = folder / "sshd_config"
        config_file.write_text("\n".join(lines) + "\n")
        # A slice of a multi-node queued resource has host names of its own, as in the stand-in.
        hostname = "t1v-n-standin{}-w-{}".format(int(node.config.get("subnet", 0)), worker)
        # Its own mounts (the home over /root, a /run for sshd's privilege separation) and its own
        # host name. Processes stay in this machine's PID space, as the stand-in's do: the fake
        # jax and the run guard see every worker's processes and the holders in one /proc.
        script = ('mount --bind "$1" /root && mount -t tmpfs -o mode=755 fakecloud-run /run && '
                  'mkdir -m 755 /run/sshd && hostname "$2" && exec "$3" -D -e -f "$4"')
        log_file = open(str(folder / "sshd.log"), "ab")
        proc = subprocess.Popen(
            ["unshare", "--mount", "--uts", "--propagation", "private",
             "sh", "-c", script, "sh", str(node.home(worker)), hostname, SSHD, str(config_file)],
            stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file, start_new_session=True)
        log_file.close()
        self.markers[worker] = [("GCLOUD_STANDIN_SHARED=" + env["GCLOUD_STANDIN_SHARED"]).encode(),
                                ("GCLOUD_STANDIN_WORKER=" + str(worker)).encode()]
        self.procs[worker] = proc

    def wait_listening(self, worker):
        """Until the worker's sshd listens (read from /proc/net/tcp, so that no probe
        connection shows in its log)."""
        octets = [int(x) for x in self.address(worker).split(".")]
        wanted = "{:02X}{:02X}{:02X}{:02X}:0016".format(*reversed(octets))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.procs[worker].poll() is not None:
                raise SystemExit("{}: sshd of worker {} ended at start ({}/{}-w{}/sshd.log)".format(
                    PROG, worker, self.cloud.ssh_dir, self.name, worker))
            with open("/proc/net/tcp") as table:
                if any(f[1] == wanted and f[3] == "0A" for f in (line.split() for line in table)):
                    return
            time.sleep(0.02)
        raise SystemExit("{}: sshd of worker {} does not listen".format(PROG, worker))

    def processes(self):
        """The pids of every process of these workers: sshd and its descendants, and any
        process whose environment carries a worker's marker (the variables its sshd sets, which
        every process started over ssh inherits, also one that left its parent)."""
        parents, marked = {}, set()
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open("/proc/{}/stat".format(entry)) as stat:
                    parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
                with open("/proc/{}/environ".format(entry), "rb") as environ:
                    words = set(environ.read().split(b"\0"))
            except (OSError, ValueError, IndexError):
                continue
            if any(all(m in words for m in markers) for markers in self.markers.values()):
                marked.add(int(entry))
        found = {p.pid for p in self.procs.values() if p.poll() is None} | marked
        grew = True
        while grew:
            more = {pid for pid, ppid in parents.items() if ppid in found} - found
            found |= more
            grew = bool(more)
        return found

    def stop(self):
        """Every worker is gone at once, as VMs that are gone: each sshd and every process
        that came through it is killed (SIGKILL), until none is left."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            pids = self.processes()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            for proc in self.procs.values():
                proc.poll()
            time.sleep(0.05)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.procs = {}
