#!/usr/bin/env python3
"""gcloud STAND-IN for tpulaunch's tests.  This is NOT the Google Cloud SDK.

It emulates these commands of gcloud 578.0.0 (GA track) against local
folders, so generated pipelines can be run end to end on a machine without
network, credentials or TPUs:

  gcloud compute tpus tpu-vm ssh      [USER@]TPU --zone=Z [--worker=W] [--command=C] [-- SSH_ARGS]
  gcloud compute tpus tpu-vm scp      [--recurse] SRC... DEST --zone=Z [--worker=W]
  gcloud compute tpus tpu-vm delete   TPU --zone=Z [--quiet] [--async]
  gcloud compute tpus tpu-vm create   TPU --zone=Z --version=V [--accelerator-type=T] [--spot|...] [--async]
  gcloud compute tpus tpu-vm describe TPU --zone=Z [--format=...]
  gcloud compute tpus queued-resources create|describe|delete QR --zone=Z ...
  gcloud storage cp    [--recursive] SOURCE... DESTINATION     (a folder stands in for gs://)
  gcloud storage rsync [--recursive] SOURCE DESTINATION

plus stand-in-only helpers (`gcloud standin create|set-state`).  Grammar and
behaviour follow docs/gcloud.md (cited in standin/ as §n), which states what
gcloud's own sources say and what the real gcloud printed.  Where gcloud's
behaviour is surprising (argparse's positional chunking, the lost exit status
of high worker indexes, the 255 retries) the stand-in reproduces it on purpose:
a stand-in more lenient than gcloud would hide bugs in the pipelines it tests.
Deviations are listed in README.md next to this file.  Nothing run through it
is a TPU result.

This file is the entry point (the `gcloud` launcher beside it runs it); the emulation is the
package standin/ beside it, one concept a module (README.md, "Layout").
"""

import sys

# Bytecode stays out of the source tree (standin/__pycache__), as for tests/real-gcloud's
# import of the package: each call compiles what it imports.
sys.dont_write_bytecode = True

from standin.main import main  # noqa: E402  (after the line above)

if __name__ == "__main__":
    sys.exit(main())
