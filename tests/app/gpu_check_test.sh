#!/usr/bin/env bash
# The no-GPU path of scripts/gpu-check (issue 25): usage errors exit 2; `prepare --samples-only` writes a fused
# and an unfused bundle and the evaluator's reference (inputs, expected outputs, reference.json) for every sample;
# `run` on that folder, with no GPU, prints the plan, says "NO GPU", exits 3 and writes a summary in which
# nothing ran. FUSIONSCOPE_GPU_CHECK_NO_GPU=1 makes the result the same on a machine that has a GPU.
#   gpu_check_test.sh SCRIPT CLI WORK_DIR
set -u -o pipefail
script=$1 cli=$2 work=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work" || fail "cannot make $work"
export FUSIONSCOPE_GPU_CHECK_NO_GPU=1

# Bad usage: a message and exit 2.
for bad in "--bogus" "prepare extra" "run a b" "prepare --sm" "run --only nothing" "run --only bundles,"; do
  # shellcheck disable=SC2086
  "$script" $bad >"$work/usage.out" 2>&1
  rc=$?
  ((rc == 2)) || fail "'gpu-check $bad' exited $rc, not 2"
  grep -q "gpu-check:" "$work/usage.out" || fail "'gpu-check $bad' printed no message"
done
"$script" --help | grep -q "scripts/gpu-check prepare" || fail "--help does not describe prepare"

# Preparation: bundles and references for every sample.
dir=$work/carry
"$script" prepare -o "$dir" --samples-only --cli "$cli" >"$work/prepare.out" 2>&1 ||
  { cat "$work/prepare.out"; fail "prepare exited $?"; }
grep -Eq "is [0-9]+\.[0-9] MiB" "$work/prepare.out" || fail "prepare did not print the folder's size"
samples=$(ls "$(dirname "$script")"/../samples/*/*.hlo | wc -l)
((samples >= 4)) || fail "found only $samples samples"
python3 - "$dir" "$samples" <<'EOF' || fail "prepared folder is incomplete (above)"
import json, os, sys
root, samples = sys.argv[1], int(sys.argv[2])
rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(root, "manifest.tsv")) if l.strip()]
ok = [r[0] for r in rows if r[1] == "ok"]
assert len(ok) == samples and all(n.startswith("sample_") for n in ok), rows
assert ["bandwidth", "timing"] == rows[-1][:2], rows[-1]
for name in ok + ["bandwidth"]:
    b = os.path.join(root, "bundles", name)
    fused = json.load(open(os.path.join(b, "fused", "bundle.json")))
    unfused = json.load(open(os.path.join(b, "unfused", "bundle.json")))
    assert fused["fusion"] is True and unfused["fusion"] is False, name
    assert len(unfused["kernels"]) >= len(fused["kernels"]), name
    assert os.path.exists(os.path.join(b, "fused", "kernels.ptx")), name
    if name == "bandwidth":
        assert not os.path.exists(os.path.join(b, "reference")), "bandwidth has no reference"
        continue
    ref = json.load(open(os.path.join(b, "reference", "reference.json")))
    assert ref["schema"] == "fusionscope.reference/2", ref["schema"]
    assert sorted(i["name"] for i in ref["inputs"]) == sorted(p["name"] for p in fused["parameters"]), name
    assert [o["index"] for o in ref["outputs"]] == [o["index"] for o in fused["outputs"]], name
    for entry in ref["inputs"] + ref["outputs"]:
        for key in ("file", "bound_file"):
            if key not in entry:
                continue
            with open(os.path.join(b, "reference", entry[key]), "rb") as f:
                assert f.read(6) == b"\x93NUMPY", entry[key]
    for o, plan in zip(ref["outputs"], fused["outputs"]):
        assert o["dtype"] == plan["dtype"] and o["dims"] == plan["dims"], (name, o, plan)
        assert "bound_file" in o and ref["bound_samples"] >= 1, o  # the result check's per-element bounds
EOF
if [[ -f /usr/include/nlohmann/json.hpp ]]; then  # the GPU machine's standalone build needs them
  [[ -f $dir/deps/include/nlohmann/json.hpp ]] || fail "prepare did not carry nlohmann/json's headers"
fi
size=$(du -sk "$dir" | cut -f1)
((size < 64 * 1024)) || fail "the prepared folder is $size KiB, over the 64 MiB the device tool carries"

# The GPU step without a GPU: the plan, "NO GPU", exit 3, a summary where nothing ran.
"$script" run "$dir" >"$work/run.out" 2>&1
rc=$?
((rc == 3)) || { cat "$work/run.out"; fail "run without a GPU exited $rc, not 3"; }
grep -q "gpu-check run would, on a GPU machine" "$work/run.out" || fail "run did not say what it would do"
grep -q "NO GPU here" "$work/run.out" || fail "run did not say that no GPU is here"
python3 - "$dir/results" <<'EOF' || fail "summary is wrong (above)"
import json, os, sys
r = sys.argv[1]
s = json.load(open(os.path.join(r, "summary.json")))
assert s["gpu_present"] is False and s["ran"] == [] and s["ok"] is False, s
assert s["bundles"] == [] and s["traces"] == {} and s["overhead"] is None and s["build"] is None, s
assert len(s["prepared"]["ok"]) >= 4, s.get("prepared")
text = open(os.path.join(r, "summary.txt")).read()
assert "NO GPU: nothing ran" in text, text
assert not os.path.exists(os.path.join(r, "bundles")), "no bundle may have run"
EOF
# check.py on a bundle whose kernels all run inside a loop (a bundle program): time per run comes from --rounds,
# and the per-element bounds of reference.json accept a difference within them but not a wrong element.
if python3 -c "import numpy" 2>/dev/null; then
python3 - "$(dirname "$script")/gpu_check/check.py" "$work/program" <<'EOF' || fail "check.py on a loop bundle (above)"
import json, os, subprocess, sys
import numpy as np
check, d = sys.argv[1], sys.argv[2]
os.makedirs(os.path.join(d, "ref", "expected"), exist_ok=True)
os.makedirs(os.path.join(d, "out"), exist_ok=True)
bundle = {"kernels": [{"name": "cond", "bytes_read": 4, "bytes_written": 1},
                      {"name": "body", "bytes_read": 8, "bytes_written": 8}],
          "program": [{"while": "w", "init": [], "state": [], "condition": [{"kernel": 0}], "predicate": 0,
                       "body": [{"kernel": 1}], "update": []}],
          "outputs": [{"index": 0, "name": "h"}]}
json.dump(bundle, open(os.path.join(d, "bundle.json"), "w"))
events = [{"ph": "X", "cat": "kernel", "name": n, "ts": 0, "dur": 1.0} for n in ["cond"] * 6 + ["body"] * 4]
json.dump({"traceEvents": events}, open(os.path.join(d, "trace.json"), "w"))
subprocess.run([sys.executable, check, "kernels", os.path.join(d, "trace.json"), d, "--rounds", "2",
                "-o", os.path.join(d, "kernels.json")], check=True, stdout=subprocess.DEVNULL)
k = json.load(open(os.path.join(d, "kernels.json")))
assert k["rounds"] == 2 and abs(k["kernel_ns_per_round"] - 5000) < 1e-6 and k["ok"], k
np.save(os.path.join(d, "ref", "expected", "output_0.npy"), np.array([1.0, 2.0, 3.0], dtype=np.float32))
np.save(os.path.join(d, "ref", "expected", "bound_0.npy"), np.array([1e-6, 0.01, 1e-6], dtype=np.float64))
reference = {"outputs": [{"index": 0, "file": "expected/output_0.npy", "bound_file": "expected/bound_0.npy"}]}
json.dump(reference, open(os.path.join(d, "ref", "reference.json"), "w"))
def compare(values):
    np.save(os.path.join(d, "out", "h.npy"), np.array(values, dtype=np.float32))
    r = subprocess.run([sys.executable, check, "compare", d, os.path.join(d, "out"), os.path.join(d, "ref"),
                        "-o", os.path.join(d, "compare.json")], stdout=subprocess.DEVNULL)
    return r.returncode, json.load(open(os.path.join(d, "compare.json")))
rc, c = compare([1.0, 2.005, 3.0])
assert rc == 0 and c["outputs"][0]["rule"] == "bounds", c
rc, c = compare([1.0, 2.05, 3.0])
assert rc != 0, c
rc, c = compare([1.0, 2.0, 3.0001])  # 1e-4 where the bound is 1e-6
assert rc != 0 and "element [2]" in c["outputs"][0]["why"], c
EOF
else
  echo "check.py program/conditioned checks skipped: no NumPy for $(command -v python3)"
fi
echo "gpu-check no-GPU path: ok"
