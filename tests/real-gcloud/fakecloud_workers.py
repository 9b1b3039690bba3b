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
# The gcloud stand-in's package (fakecloud.py puts it on sys.path too; not when run alone, below).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gcloud-standin"))
from standin import vm  # noqa: E402
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
        # The listening sshd's pid (unshare and sh exec into it), for lib.sh's drop_worker_connection.
        (folder / "sshd.pid").write_text("{}\n".format(proc.pid))
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

    def sessions(self, worker):
        """The worker's ssh sessions that run a command: command_sessions of its listening sshd."""
        proc = self.procs.get(worker)
        return command_sessions(proc.pid) if proc is not None and proc.poll() is None else []

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


# --------------------------------------------------------------------------
# Connections: a worker's ssh sessions, and dropping one.
# --------------------------------------------------------------------------

def process_table():
    """{pid: (parent pid, start time in clock ticks after boot, argv[0])} of every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/{}/stat".format(entry)) as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open("/proc/{}/cmdline".format(entry), "rb") as cmdline:
                name = cmdline.read().split(b"\0")[0].decode(errors="replace")
            table[int(entry)] = (int(fields[1]), int(fields[19]), name)
        except (OSError, ValueError, IndexError):
            continue
    return table


def command_sessions(listener):
    """[(pid, seconds)] of the per-connection sshd processes (children of the listening sshd
    `listener`) that run a command, each with how long its command has run: those with a child
    that is not sshd's own (its pre-auth child is `sshd: … [net]`), the user's shell. scp's
    sessions have none (OpenSSH 9's scp speaks SFTP, served by sshd's internal-sftp)."""
    table = process_table()
    with open("/proc/uptime") as uptime:
        now = float(uptime.read().split()[0])
    ticks = os.sysconf("SC_CLK_TCK")
    sessions = []
    for pid, (ppid, _, _) in sorted(table.items()):
        if ppid != listener:
            continue
        shells = [start for ppid2, start, name in table.values() if ppid2 == pid and not name.startswith("sshd")]
        if shells:
            sessions.append((pid, now - min(shells) / ticks))
    return sessions


def drop_sessions(listener, after=0.0, timeout=20.0):
    """Waits (up to `timeout` s) for a command session of the listening sshd `listener` whose
    command has run `after` s, then kills it (SIGKILL): the connection drops as when that sshd process dies,
    while the session's shell runs on without its pipes. Returns the pids killed ([] if none)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ripe = [pid for pid, age in command_sessions(listener) if age >= after]
        if ripe:
            for pid in ripe:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            return ripe
        time.sleep(0.02)
    return []


if __name__ == "__main__":
    # fakecloud_workers.py drop SSHD_PID_FILE [AFTER [TIMEOUT]]: lib.sh's drop_worker_connection.
    if len(sys.argv) < 3 or sys.argv[1] != "drop":
        sys.exit("usage: fakecloud_workers.py drop SSHD_PID_FILE [AFTER [TIMEOUT]]")
    with open(sys.argv[2]) as pid_file:
        LISTENER = int(pid_file.read())
    KILLED = drop_sessions(LISTENER, *(float(a) for a in sys.argv[3:5]))
    print(" ".join(str(pid) for pid in KILLED))
    sys.exit(0 if KILLED else 1)
