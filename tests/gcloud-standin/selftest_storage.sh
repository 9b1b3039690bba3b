# Self-test of the gcloud stand-in, part 3: the fake jax, the stand-in lessons and storage cp / rsync.
# Sourced by selftest.sh after selftest_lib.sh (its helpers g, expect, ok, bad, home, gone,
# workers_of and its variables TPU, ZP, STATE, HERE, WORK), in order: each part uses the
# TPUs the parts before it made. Not run alone.
# shellcheck shell=bash disable=SC2016,SC2154

# ---------------------------------------------------------------- fake jax + lessons
g "${TPU[@]}" scp "$HERE/lesson_standin.py" "$HERE/discover_standin.py" pod:~/lab/ "${ZP[@]}" --worker=all
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all \
  --command='python3 -m venv ~/venv && ~/venv/bin/pip install "jax[tpu]"'
expect "python3 -m venv + pip install (installs nothing)" 0 "stand-in: pip install jax[tpu] (nothing installed)"
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=1 \
  --command='python3 -m venv --clear ~/venv2 && . ~/venv2/bin/activate && python -m pip install -U jax && python -c "import jax; print(jax.default_backend())"'
expect "venv --clear, activate, python -m pip; backend is standin" 0 "stand-in: pip install -U jax" "standin"
g "${TPU[@]}" ssh pod "${ZP[@]}" --command='python3 -c "import jax"'
expect "without the venv there is no jax" 1 "No module named 'jax'"
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all \
  --command='cd ~/lab && TPU_RUN_DIR=~/lab/run ~/venv/bin/python discover_standin.py && TPU_RUN_DIR=~/lab/run ~/venv/bin/python lesson_standin.py'
python3 - "$STATE" >"$WORK/check" 2>&1 <<'EOF'
import json, sys, pathlib
root = pathlib.Path(sys.argv[1]) / "tpus" / "pod"
problems = []
for i in range(4):
    run = root / f"worker-{i}/home/lab/run"
    d = json.loads((run / f"discovery-{i}.json").read_text())
    w = json.loads((run / f"worker-{i}.json").read_text())
    if d != {"kind": "discovery", "process_index": i, "process_count": 4, "local_device_count": 4,
             "device_count": 16, "backend": "standin", "hostname": f"t1v-n-standin0-w-{i}"}:
        problems.append(f"discovery-{i}: {d}")
    keys = ["kind", "script", "process_index", "process_count", "local_device_count", "device_count",
            "backend", "hostname", "owned_inputs", "global_mean_gradient", "expected_mean_gradient",
            "params_before", "params_after", "check"]
    if list(w) != keys or w["owned_inputs"] != [4 * i + k for k in range(4)] or w["check"] != "passed" \
            or w["backend"] != "standin" or w["script"] != "lesson_standin":
        problems.append(f"worker-{i}: {w}")
    if (run / "checkpoint.json").exists() != (i == 0):
        problems.append(f"checkpoint on worker {i}: {(run / 'checkpoint.json').exists()}")
    if not (run / "events.jsonl").read_text().strip():
        problems.append(f"no events on worker {i}")
c = json.loads((root / "worker-0/home/lab/run/checkpoint.json").read_text())
if list(c) != ["kind", "written_by", "process_count", "step", "params", "global_mean_gradient"] \
        or c["written_by"] != 0 or c["process_count"] != 4 or c["step"] != 1:
    problems.append(f"checkpoint: {c}")
print("\n".join(problems) or "receipts ok")
EOF
if [ "$rc" -eq 0 ] && [ "$(cat "$WORK/check")" = "receipts ok" ]; then
  ok "lessons on 4 workers: discovery, training and checkpoint receipts"
else bad "lessons on 4 workers: discovery, training and checkpoint receipts" "$(cat "$WORK/check")"; fi
LESSON_FAIL_WORKER=2 g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all \
  --command='cd ~/lab && TPU_RUN_DIR=~/lab/fail ~/venv/bin/python lesson_standin.py'
if [ "$rc" -eq 1 ] && grep -qF "worker 2 failed with exit status 7" "$WORK/err" &&
  grep -qF "process(es) [2] exited before reaching collective" "$WORK/err" &&
  [ ! -e "$(home pod 2)/lab/fail/worker-2.json" ]; then
  ok "LESSON_FAIL_WORKER=2: exit 7 there, its peers fail, exit = worker 0's"
else bad "LESSON_FAIL_WORKER=2: exit 7 there, its peers fail, exit = worker 0's"; fi
g "${TPU[@]}" ssh pod "${ZP[@]}" --command='cd ~/lab && ~/venv/bin/python lesson_standin.py'
expect "lesson without TPU_RUN_DIR fails clearly" 2 "TPU_RUN_DIR is not set"
FAKEJAX_TIMEOUT=1 g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=1 \
  --command='cd ~/lab && TPU_RUN_DIR=~/lab/one ~/venv/bin/python discover_standin.py'
expect "one worker of four: initialize() times out (all hosts must run)" 1 \
  "Did you run your code on all TPU hosts?"
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all \
  --command='~/venv/bin/python -c "import jax; jax.process_index(); jax.distributed.initialize()"'
expect "fake jax: initialize() after a jax call is refused" 1 "must be called before any JAX calls"
g "${TPU[@]}" ssh solo --zone="$ZONE" --project=any \
  --command='python3 -m venv v && v/bin/python -c "import jax; jax.distributed.initialize(); jax.distributed.initialize()"'
expect "fake jax: initialize() twice is refused" 1 "distributed.initialize should only be called once."
# Without initialize() a process of a multi-host slice is in no job, as with real JAX: it sees
# itself only, and a collective blocks (FAKEJAX_TIMEOUT), then fails saying why.
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all \
  --command='~/venv/bin/python -c "import jax; print(\"sees\", jax.process_index(), jax.process_count(), jax.device_count(), len(jax.devices()))"'
if [ "$rc" -eq 0 ] && [ "$(grep -c '^sees 0 1 4 4$' "$WORK/out")" -eq 4 ]; then
  ok "fake jax without initialize() on 4 workers: each is process 0 of 1 with its own 4 devices"
else bad "fake jax without initialize() on 4 workers: each is process 0 of 1 with its own 4 devices"; fi
FAKEJAX_TIMEOUT=1 g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all \
  --command='~/venv/bin/python -c "from jax.experimental import multihost_utils as m; m.process_allgather(1)"'
expect "fake jax without initialize(): a collective blocks, then fails naming the missing call" 1 \
  "process_allgather waited 1 s for the other 3 hosts of this 4-host slice, which never answer: jax.distributed.initialize() was not called"
g "${TPU[@]}" ssh solo --zone="$ZONE" --project=any \
  --command='v/bin/python -c "from jax.experimental import multihost_utils as m; import jax; print(m.process_allgather(7), jax.process_count())"'
expect "fake jax without initialize() on one host: no call needed" 0 "" "[7] 1"
# jax.local_device_count() is the devices per host of the node's accelerator type
# (catalog/slices.json): solo is v5litepod-8 (8 chips), v3 counts TensorCores (8 a host).
g "${TPU[@]}" ssh solo --zone="$ZONE" --project=any --command='v/bin/python -c "import jax; print(jax.local_device_count())"'
expect "fake jax on a v5litepod-8 node: 8 local devices" 0 "" "8"
g standin create v3pod --zone="$ZONE" --workers=4 --accelerator-type=v3-32
g "${TPU[@]}" ssh v3pod "${ZP[@]}" --worker=all \
  --command='python3 -m venv v && v/bin/python -c "import jax; jax.distributed.initialize(); print(\"devices\", jax.local_device_count(), jax.device_count())"'
if [ "$rc" -eq 0 ] && [ "$(grep -c '^devices 8 32$' "$WORK/out")" -eq 4 ]; then
  ok "fake jax on a v3-32 node: 8 devices a host (two TensorCores a chip), 32 in all"
else bad "fake jax on a v3-32 node: 8 devices a host (two TensorCores a chip), 32 in all"; fi
FAKEJAX_LOCAL_DEVICES=2 g "${TPU[@]}" ssh solo --zone="$ZONE" --project=any \
  --command='v/bin/python -c "import jax; print(jax.local_device_count())"'
expect "FAKEJAX_LOCAL_DEVICES overrides the accelerator type's" 0 "" "2"

# ---------------------------------------------------------------- storage cp / rsync
# A folder stands in for Cloud Storage: gs://BUCKET/NAME is $GCS/BUCKET/NAME. Naming follows
# gcloud 578's copy_task_iterator.py (see README.md).
GCS="$STATE/gcs"
objects() { (cd "$GCS/$1" 2>/dev/null && find . -type f | sed 's|^\./||' | sort | tr '\n' ' ' | sed 's/ $//'); }
g standin create-bucket lab-results
expect "standin create-bucket" 0
g standin create-bucket Lab_Results
expect "standin create-bucket follows the bucket naming rules" 2 "only lowercase letters"
mkdir -p src/run1/artifacts && echo log >src/run1/log.txt && echo r >src/run1/artifacts/w.json
g storage cp --recursive src/run1 gs://lab-results/new
expect "cp -r DIR to a new name: the folder's contents land under that name" 0 \
  "Copying file://src/run1/log.txt to gs://lab-results/new/log.txt"
if [ "$(objects lab-results)" = "new/artifacts/w.json new/log.txt" ]; then
  ok "... as new/log.txt, new/artifacts/w.json"
else
  bad "... as new/log.txt, new/artifacts/w.json" "$(objects lab-results)"
fi
g storage cp -r src/run1 gs://lab-results/new
expect "cp -r DIR to an existing prefix: the folder lands inside it" 0 "to gs://lab-results/new/run1/log.txt"
g storage cp -R src/run1 gs://lab-results/w0/
expect "cp -R DIR to a new name ending in /: inside it, as into a folder" 0 "to gs://lab-results/w0/run1/log.txt"
g storage cp -r src/run1 gs://lab-results/w0/
expect "... and the same again (a retried upload) lands in the same place" 0 "to gs://lab-results/w0/run1/log.txt"
g storage cp src/run1/log.txt gs://lab-results
expect "cp FILE gs://BUCKET: the object is named after the file" 0 "to gs://lab-results/log.txt"
g storage cp src/run1 gs://lab-results/x/
expect "a folder without --recursive is omitted, and then matched nothing" 1 \
  "WARNING: Omitting file://src/run1 because it is a container, and recursion is not enabled."
if grep -qF "The following URLs matched no objects or files:" "$WORK/err"; then
  ok "... with gcloud's error"
else
  bad "... with gcloud's error"
fi
g storage cp -r src/nothing gs://lab-results/x/
expect "a source that matches nothing" 1 "The following URLs matched no objects or files:"
g storage cp -r src/run1 gs://no-such-bucket/x/
expect "a bucket that does not exist" 1 "HTTPError 404: The specified bucket does not exist."
mkdir dl
g storage cp --recursive gs://lab-results/w0 dl
expect "download a prefix into an existing folder: dl/w0/..." 0
if [ -f dl/w0/run1/artifacts/w.json ] && [ -f dl/w0/run1/log.txt ]; then
  ok "... with every object"
else
  bad "... with every object"
fi
g storage cp -r gs://lab-results/w0 nowhere
expect "download of several objects into a folder that does not exist" 1 \
  "Destination URL must name an existing directory. Provided: nowhere."
g storage cp gs://lab-results/log.txt nowhere/
expect "download of one object to a missing folder ending in /" 1 \
  "Destination URL must name an existing directory if it ends with a delimiter. Provided: nowhere/."
mkdir wild
g storage cp -r 'gs://lab-results/w*' 'gs://lab-results/n?w' wild/
expect "wildcards: * and ? in cloud URLs" 0
if [ -f wild/w0/run1/log.txt ] && [ -f wild/new/log.txt ]; then
  ok "... each match keeps its name (several top-level sources)"
else
  bad "... each match keeps its name (several top-level sources)"
fi
g storage cp -r 'gs://lab-results/w*' 'gs://lab-results/zz*' wild/
expect "a wildcard that matches nothing is named, after the others are copied" 1 "gs://lab-results/zz*"
g storage cp gs://lab-results/log.txt 'gs://lab-results/q*/'
expect "a destination wildcard must match exactly one URL" 1 "contains an unexpected wildcard"
g storage cp
expect "cp needs a destination" 2 "argument DESTINATION: Must be specified."
g storage cp gs://lab-results
expect "cp needs a source" 1 "Must have URL arguments if not reading paths from stdin."
g storage cp --storage-class=NEARLINE src/run1/log.txt gs://lab-results
expect "valid but not emulated storage flags: exit 2" 2 "--storage-class is valid gcloud grammar but is not emulated"
g storage cp --recursve src gs://lab-results
expect "mistyped storage flag" 2 "unrecognized arguments: --recursve (did you mean '--recursive'?)"
g storage ls gs://lab-results
expect "other storage verbs are valid but not emulated" 2 "gcloud storage ls\` is valid gcloud but is not emulated"
g storage cpy a b
expect "mistyped storage verb" 2 "Invalid choice: 'cpy'."
GCLOUD_STANDIN_NO_AUTH=1 g storage cp src/run1/log.txt gs://lab-results
expect "storage without credentials" 1 "You do not currently have an active account selected."
g storage rsync -r src/run1 gs://lab-results/synced
expect "rsync -r DIR to a new prefix: the contents, under that name" 0 "to gs://lab-results/synced/artifacts/w.json"
g storage rsync -r src/run1 gs://lab-results/synced
if [ "$rc" -eq 0 ] && ! grep -q Copying "$WORK/err"; then ok "rsync again copies nothing"; else bad "rsync again copies nothing"; fi
g storage rsync src/run1 gs://lab-results/top
if [ "$rc" -eq 0 ] && [ "$(objects lab-results/top)" = "log.txt" ]; then
  ok "rsync without -r: the top level only"
else
  bad "rsync without -r: the top level only" "$(objects lab-results/top)"
fi
echo extra >"$GCS/lab-results/synced/extra.txt"
g storage rsync -r --delete-unmatched-destination-objects src/run1 gs://lab-results/synced
if [ "$rc" -eq 0 ] && [ ! -e "$GCS/lab-results/synced/extra.txt" ]; then
  ok "rsync --delete-unmatched-destination-objects"
else
  bad "rsync --delete-unmatched-destination-objects"
fi
g storage rsync -r gs://lab-results/nope dl/x
expect "rsync from a container that does not exist" 1 "Did not find existing container at: gs://lab-results/nope"

# On a worker: the metadata server names the worker, and the TPU's own gcloud uploads.
META=http://metadata.google.internal/computeMetadata/v1/instance/attributes/agent-worker-number
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all --command="printf '%s\n' \"\$(curl -sSf -H 'Metadata-Flavor: Google' $META)\""
if [ "$rc" -eq 0 ] && [ "$(sort -n "$WORK/out" | tr '\n' ' ')" = "0 1 2 3 " ]; then
  ok "a worker's metadata server answers agent-worker-number with its index"
else
  bad "a worker's metadata server answers agent-worker-number with its index"
fi
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=2 --command="curl -sSf $META"
expect "... only with Metadata-Flavor: Google (else 403)" 22 "The requested URL returned error: 403"
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=2 --command="curl -sS https://storage.googleapis.com/"
expect "... and a worker reaches no other host" 6 "Could not resolve host: storage.googleapis.com"
UPLOAD='w=$(curl -sSf -H "Metadata-Flavor: Google" '"$META"') && mkdir -p run && echo "$w" >run/w.txt && gcloud storage cp -r run "gs://lab-results/up/worker-$w/"'
GCLOUD_STANDIN_GCS_FAIL_WORKERS=1 g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all --command="$UPLOAD"
expect "an upload refused on worker 1 (GCLOUD_STANDIN_GCS_FAIL_WORKERS)" 1 \
  "does not have storage.objects.create access to the Google Cloud Storage object"
if [ "$(objects lab-results/up)" = "worker-0/run/w.txt worker-2/run/w.txt worker-3/run/w.txt" ]; then
  ok "... while workers 0, 2 and 3 upload with the TPU's gcloud"
else
  bad "... while workers 0, 2 and 3 upload" "$(objects lab-results/up)"
fi
python3 - "$STATE/calls.jsonl" >"$WORK/check" 2>&1 <<'EOF'
import json, sys
calls = [json.loads(line) for line in open(sys.argv[1])]
on_workers = [c for c in calls if "worker" in c]
ups = [c for c in on_workers if c["argv"][:2] == ["storage", "cp"] and "gs://lab-results/up/" in c["argv"][-1]]
ok = (sorted((c["worker"], c["exit"]) for c in ups) == [(0, 0), (1, 1), (2, 0), (3, 0)]
      and all(c["tpu"] == "pod" for c in ups)
      and all(sorted(c) == ["argv", "exit", "t_end", "t_start"] for c in calls if "worker" not in c))
print("calls ok" if ok else "bad: {}".format(ups))
EOF
if [ "$(cat "$WORK/check")" = "calls ok" ]; then
  ok "calls.jsonl marks the calls made on a worker (tpu, worker)"
else
  bad "calls.jsonl marks the calls made on a worker (tpu, worker)" "$(cat "$WORK/check")"
fi
