"""A dropped ssh connection (GCLOUD_STANDIN_DROP_WORKERS, _AFTER, _WHEN): mid-command, a worker's
ssh session ends as when its per-connection sshd dies (docs/gcloud.md §11, seen with the real
sshd in tests/real-gcloud): ssh prints `Connection to ADDRESS closed by remote host.` and exits 255,
so gcloud runs the same command again (§1.3). The session's processes are NOT killed: they lose
the connection's pipes (a write to stdout or stderr gets SIGPIPE, as the `bash -c` there has it by
default) and run on otherwise, as do those that left with setsid. Each listed worker of a TPU
drops once: the first ssh attempt with a command there that lasts DROP_AFTER seconds (and, with
DROP_WHEN, sees a file matching that glob under the worker's home); its retries and later calls
run normally. tests/real-gcloud's fakecloud.py reads the same knobs and the same once-only mark."""

import glob
import os
import select
import threading
import time

from .console import STANDIN_TAG, fail

DROPPED_MARK = "ssh-dropped"        # in the worker's folder: its connection dropped once already
DRAIN_AFTER_EXIT = 0.2              # seconds of output still relayed once the shell has exited


class DropKnobs:
    """The three knobs, read once per call; `workers` is empty when no drop is asked for."""

    def __init__(self, prog):
        self.workers, self.after, self.when = set(), 0.0, os.environ.get("GCLOUD_STANDIN_DROP_WHEN") or None
        for item in (os.environ.get("GCLOUD_STANDIN_DROP_WORKERS") or "").split(","):
            if item.strip() and not item.strip().isdigit():
                fail(prog, "{} GCLOUD_STANDIN_DROP_WORKERS must be a comma list of worker indexes, "
                           "not {!r}".format(STANDIN_TAG, item), 2)
            if item.strip():
                self.workers.add(int(item))
        raw = os.environ.get("GCLOUD_STANDIN_DROP_AFTER") or "0"
        try:
            self.after = float(raw)
        except ValueError:
            fail(prog, "{} GCLOUD_STANDIN_DROP_AFTER must be a number of seconds, not {!r}".format(
                STANDIN_TAG, raw), 2)

    def pending(self, worker_folder, worker):
        """Whether this worker's connection is still to drop."""
        return worker in self.workers and not (worker_folder / DROPPED_MARK).exists()

    def due(self, home, started):
        """Whether an attempt that began at `started` (time.monotonic()) drops now."""
        return self.ripe(home, time.monotonic() - started)

    def ripe(self, home, age):
        """Whether a session `age` seconds old on the worker whose home is `home` drops now."""
        if age < self.after:
            return False
        return self.when is None or bool(glob.glob(str(home / self.when), recursive=True))


def claim(worker_folder, detail):
    """Marks the worker's connection as dropped; False when another call did it first."""
    try:
        fd = os.open(str(worker_folder / DROPPED_MARK), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    try:
        os.write(fd, (detail + "\n").encode())
    finally:
        os.close(fd)
    return True


class Relay:
    """The session's stdout and stderr as pipes this call copies to its own (as ssh does), so that
    a drop can cut them: the read ends closed, a later write by the session gets SIGPIPE."""

    def __init__(self):
        self.pipes = [os.pipe(), os.pipe()]         # stdout, stderr: (read, write)
        self.stop_r, self.stop_w = os.pipe()
        self.threads = []

    def child_fds(self):
        return self.pipes[0][1], self.pipes[1][1]

    def start(self):
        for (read_fd, write_fd), target in zip(self.pipes, (1, 2)):
            os.close(write_fd)                      # the child has its own copy
            thread = threading.Thread(target=self.copy, args=(read_fd, target), daemon=True)
            thread.start()
            self.threads.append(thread)

    def copy(self, source, target):
        try:
            while True:
                ready = select.select([source, self.stop_r], [], [])[0]
                if self.stop_r in ready:
                    return
                data = os.read(source, 65536)
                if not data:
                    return
                while data:
                    data = data[os.write(target, data):]
        except OSError:
            return
        finally:
            os.close(source)

    def cut(self, grace=0.0):
        """Stops copying (after `grace` seconds for the rest of the output) and closes the reads."""
        deadline = time.monotonic() + grace
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        os.write(self.stop_w, b"x")
        for thread in self.threads:
            thread.join()
        os.close(self.stop_r)
        os.close(self.stop_w)


def wait_or_drop(knobs, proc, relay, worker_folder, home, started, detail):
    """Waits for the session's shell; True when the connection dropped first (the shell runs on)."""
    while proc.poll() is None:
        if knobs.due(home, started) and claim(worker_folder, detail):
            relay.cut()
            return True
        time.sleep(0.02)
    relay.cut(DRAIN_AFTER_EXIT)
    return False
