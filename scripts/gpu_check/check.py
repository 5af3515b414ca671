#!/usr/bin/env python3
"""Checks and figures for scripts/gpu-check's GPU step (docs/PROFILER.md "scripts/gpu-check").

Subcommands (each prints one JSON object on stdout and, with -o FILE, writes it there too):
  compare BUNDLE_DIR OUTPUT_DIR REFERENCE_DIR   gpurun's outputs against the evaluator's (reference.json rules)
  trace TRACE [--want-memcpy]                   what a CUPTI trace holds: kernels, memcpys, API calls, ac2g, dropped
  kernels TRACE BUNDLE_DIR                      kernel time per launch round and achieved bandwidth per kernel
  bandwidth COPY_JSON KERNELS_JSON...           memory-bound fused kernels' GB/s against the device's copy GB/s
  summary RESULTS_DIR                           summary.json + summary.txt from the step files, printed

Standard library only, except `compare`, which needs NumPy (present wherever JAX or PyTorch is).
"""
import argparse
import glob
import gzip
import json
import os
import statistics
import sys


def load_json(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data)


def emit(result, out):
    text = json.dumps(result, indent=2)
    if out:
        with open(out + ".tmp", "w") as f:
            f.write(text + "\n")
        os.replace(out + ".tmp", out)
    print(text)


def read_npy(path):
    import numpy as np  # only here: the rest runs without NumPy

    a = np.load(path, allow_pickle=False)
    if a.dtype.kind == "V" and a.dtype.itemsize == 2:  # gpurun writes bf16 as <V2: the upper 16 bits of an f32
        a = (a.view("<u2").astype(np.uint32) << 16).view(np.float32)
    return a


def cmd_compare(args):
    import numpy as np

    bundle = load_json(os.path.join(args.bundle, "bundle.json"))
    reference = load_json(os.path.join(args.reference, "reference.json"))
    expected = {o["index"]: o for o in reference["outputs"]}
    result = {"bundle": args.bundle, "module": bundle.get("module"), "fusion": bundle.get("fusion"), "ok": True,
              "outputs": []}
    for out in bundle["outputs"]:
        ref = expected.get(out["index"])
        entry = {"index": out["index"], "name": out["name"]}
        if ref is None:
            entry.update(ok=False, why="no reference for this output")
        else:
            e = read_npy(os.path.join(args.reference, ref["file"]))
            path = os.path.join(args.outputs, out["name"] + ".npy")
            a = read_npy(path) if os.path.exists(path) else None
            if a is None:
                entry.update(ok=False, why="gpurun wrote no " + path)
            elif a.shape != e.shape:
                entry.update(ok=False, why="shape %s vs expected %s" % (a.shape, e.shape))
            elif "bound_file" not in ref:
                entry.update(ok=False, why="reference.json has no bound_file (written by an older fusionscope-cli)")
            else:
                # The result check's own per-element bounds (core/eval/result_check.h), saved by `run
                # --save-reference`: |e - a| <= bound, NaN where both are NaN, equal infinities.
                bound = read_npy(os.path.join(args.reference, ref["bound_file"])).astype(np.float64)
                e64, a64 = e.astype(np.float64), a.astype(np.float64)
                nan_ok = np.isnan(e64) & np.isnan(a64)
                with np.errstate(invalid="ignore"):
                    diff = np.where(nan_ok | (e64 == a64), 0.0, np.abs(e64 - a64))
                diff = np.where(np.isnan(diff), np.inf, diff)
                close = diff <= bound
                finite = np.isfinite(diff)
                entry.update(ok=bool(close.all()), rule="bounds",
                             max_abs_error=float(diff[finite].max()) if finite.any() else 0.0,
                             max_bound=float(bound[np.isfinite(bound)].max()) if np.isfinite(bound).any() else 0.0)
                if not entry["ok"]:
                    i = np.unravel_index(int(np.argmax(~close)), e.shape) if e.ndim else ()
                    entry["why"] = "element %s: expected %r, got %r, bound %r" % (
                        list(map(int, i)), float(e64[i]), float(a64[i]), float(bound[i]))
        result["outputs"].append(entry)
        result["ok"] = result["ok"] and entry["ok"]
    emit(result, args.o)
    return 0 if result["ok"] else 1


def events_of(trace):
    return trace["traceEvents"] if isinstance(trace, dict) else trace


def cmd_trace(args):
    trace = load_json(args.trace)
    events = events_of(trace)
    count = {"kernels": 0, "memcpys": 0, "memsets": 0, "runtime_api": 0, "driver_api": 0, "ac2g_starts": 0,
             "ac2g_finishes": 0}
    for e in events:
        cat, ph = e.get("cat"), e.get("ph")
        if ph == "X" and cat == "kernel":
            count["kernels"] += 1
        elif ph == "X" and cat == "gpu_memcpy":
            count["memcpys"] += 1
        elif ph == "X" and cat == "gpu_memset":
            count["memsets"] += 1
        elif ph == "X" and cat == "cuda_runtime":
            count["runtime_api"] += 1
        elif ph == "X" and cat == "cuda_driver":
            count["driver_api"] += 1
        elif cat == "ac2g" and ph == "s":
            count["ac2g_starts"] += 1
        elif cat == "ac2g" and ph == "f":
            count["ac2g_finishes"] += 1
    collector = trace.get("fusionscope_cupti") if isinstance(trace, dict) else None
    dropped = collector.get("dropped_records") if isinstance(collector, dict) else None
    missing = [k for k in ("kernels", "ac2g_starts", "ac2g_finishes") if count[k] == 0]
    if count["runtime_api"] == 0:
        missing.append("runtime_api")
    if args.want_memcpy and count["memcpys"] == 0:
        missing.append("memcpys")
    if dropped is None:
        missing.append("dropped_records")
    result = {"trace": args.trace, "events": len(events), **count, "dropped_records": dropped,
              "collector": collector, "missing": missing, "ok": not missing}
    emit(result, args.o)
    return 0 if result["ok"] else 1


def cmd_kernels(args):
    trace = load_json(args.trace)
    bundle = load_json(os.path.join(args.bundle, "bundle.json"))
    plan = {k["name"]: k for k in bundle["kernels"]}
    durations = {}
    for e in events_of(trace):
        if e.get("ph") == "X" and e.get("cat") == "kernel" and e.get("name") in plan:
            durations.setdefault(e["name"], []).append(float(e.get("dur", 0)) * 1e3)  # us -> ns
    kernels = []
    for name, k in plan.items():
        d = durations.get(name, [])
        moved = int(k.get("bytes_read", 0)) + int(k.get("bytes_written", 0))
        median = statistics.median(d) if d else None
        kernels.append({"name": name, "kind": k.get("kind"), "launches": len(d), "median_ns": median,
                        "total_ns": sum(d), "bytes": moved,
                        "gb_per_s": moved / median if median else None})  # bytes per ns = GB/s
    # A run launches the kernels outside loops and branches once each (all kernels when there is no program);
    # the others as often as their loop trips or branch is taken.
    names = [k["name"] for k in bundle["kernels"]]
    once = ([names[s["kernel"]] for s in bundle["program"] if "kernel" in s] if "program" in bundle else names)
    launches = args.rounds if args.rounds else min((len(durations.get(name, [])) for name in once), default=0)
    result = {"bundle": args.bundle, "module": bundle.get("module"), "fusion": bundle.get("fusion"),
              "kernels_in_plan": len(plan), "rounds": launches,
              "kernel_ns_per_round": sum(k["total_ns"] for k in kernels) / launches if launches else None,
              "kernels": kernels,
              "ok": launches > 0 and all(len(durations.get(name, [])) == launches for name in once)}
    emit(result, args.o)
    return 0 if result["ok"] else 1


def cmd_bandwidth(args):
    copy = load_json(args.copy)
    copy_gbs = copy.get("copy_gb_per_s")
    kernels = []
    for path in args.kernels:
        k = load_json(path)
        if not k.get("fusion"):
            continue
        for kernel in k["kernels"]:
            # Memory-bound: loop and input (reduction) fusions and plain copies; big enough (>= 64 MB moved) that
            # launch latency does not decide the time.
            if kernel["kind"] in ("kLoop", "kInput", "copy") and kernel["bytes"] >= 64e6 and kernel["median_ns"]:
                kernel = dict(kernel, module=k.get("module"))
                kernel["percent_of_copy"] = 100.0 * kernel["gb_per_s"] / copy_gbs if copy_gbs else None
                kernels.append(kernel)
    result = {"copy_gb_per_s": copy_gbs, "copy": copy, "kernels": kernels,
              "min_percent_of_copy": min((k["percent_of_copy"] for k in kernels if k["percent_of_copy"]), default=None)}
    result["meets_70_percent"] = result["min_percent_of_copy"] is not None and result["min_percent_of_copy"] >= 70
    result["ok"] = bool(kernels and copy_gbs)
    if not result["ok"]:
        result["why"] = "no copy figure" if not copy_gbs else "no memory-bound fused kernel of >= 64 MB ran"
    emit(result, args.o)
    return 0 if kernels and copy_gbs else 1


def read_step(results, name):
    path = os.path.join(results, name)
    return load_json(path) if os.path.exists(path) else None


def cmd_summary(args):
    r = args.results
    env = read_step(r, "environment.json") or {}
    summary = {"schema": "fusionscope.gpu-check/1", "gpu_present": env.get("gpu_present", False),
               "environment": env, "build": read_step(r, "build.json"), "bundles": [], "traces": {},
               "overhead": read_step(r, "overhead.json"), "bandwidth": None, "ran": []}
    failures = []
    manifest = os.path.join(args.prepared, "manifest.tsv") if args.prepared else None
    if manifest and os.path.exists(manifest):
        with open(manifest) as f:
            rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
        summary["prepared"] = {status: sorted(row[0] for row in rows if row[1] == status)
                               for status in sorted({row[1] for row in rows})}
    overhead_trace = read_step(r, "overhead_trace.json")
    if summary["overhead"] is not None and overhead_trace is not None:
        summary["overhead"]["trace_kernels"] = overhead_trace.get("kernels")
        summary["overhead"]["trace_dropped_records"] = overhead_trace.get("dropped_records")
    if summary["overhead"] is not None and not summary["overhead"].get("ok", True):
        failures.append("overhead: " + summary["overhead"].get("why", "failed"))
    for f in sorted(glob.glob(os.path.join(r, "bundles", "*", "*", "compare.json"))):
        variant_dir = os.path.dirname(f)
        c = load_json(f)
        timing = read_step(variant_dir, "kernels.json") or {}
        summary["bundles"].append({"name": os.path.basename(os.path.dirname(variant_dir)),
                                   "variant": os.path.basename(variant_dir), "match": c.get("ok"),
                                   "kernels": timing.get("kernels_in_plan"),
                                   "kernel_ns_per_round": timing.get("kernel_ns_per_round")})
        if not c.get("ok"):
            failures.append("bundle %s/%s does not match the evaluator" % (summary["bundles"][-1]["name"],
                                                                           os.path.basename(variant_dir)))
    for f in sorted(glob.glob(os.path.join(r, "bundles", "*", "*", "error.txt"))):
        with open(f) as h:
            failures.append("bundle %s: %s" % (os.path.relpath(os.path.dirname(f), os.path.join(r, "bundles")),
                                               (h.read().strip().splitlines() or ["failed"])[-1]))
    for program in ("jax", "torch"):
        t = read_step(r, "trace_%s.json" % program)
        if t is not None:
            summary["traces"][program] = t
            if not t.get("ok"):
                failures.append("%s trace: %s" % (program, t.get("why") or "missing " + ", ".join(t.get("missing", []))))
    bw = read_step(r, "bandwidth.json")
    if bw is not None:
        summary["bandwidth"] = bw
        if bw.get("ok") is False:
            failures.append("bandwidth: " + bw.get("why", "failed"))
    if summary["build"] and not summary["build"].get("ok"):
        failures.append("standalone GPU build failed")
    summary["ran"] = [k for k in ("build", "overhead", "bandwidth") if summary[k]] + \
        (["bundles"] if summary["bundles"] else []) + ["trace_" + p for p in summary["traces"]]
    summary["failures"] = failures
    summary["ok"] = summary["gpu_present"] and not failures
    with open(os.path.join(r, "summary.json"), "w") as f:
        f.write(json.dumps(summary, indent=2) + "\n")
    text = summary_text(summary)
    with open(os.path.join(r, "summary.txt"), "w") as f:
        f.write(text)
    print(text, end="")
    return 0 if summary["ok"] else 1


def fmt_ns(ns):
    return "-" if ns is None else "%.1f us" % (ns / 1e3)


def summary_text(s):
    env = s["environment"]
    lines = ["fusionscope gpu-check summary", ""]
    if s["gpu_present"]:
        lines.append("GPU: %s; driver %s (CUDA %s); CUPTI %s; toolkit %s; jax %s; torch %s" % (
            env.get("gpu_name"), env.get("driver_version"), env.get("driver_cuda_version"), env.get("cupti_version"),
            env.get("toolkit"), env.get("jax"), env.get("torch")))
    else:
        lines.append("GPU: none found (%s)" % env.get("why", "?"))
    if s["build"]:
        lines.append("standalone build: %s (%s s)" % ("ok" if s["build"].get("ok") else "FAILED",
                                                    s["build"].get("seconds")))
    if s["bundles"]:
        lines.append("")
        lines.append("bundles vs the evaluator (GPU kernel time per run of the module, from 20 runs):")
        pairs = {}
        for b in s["bundles"]:
            pairs.setdefault(b["name"], {})[b["variant"]] = b
        for name, v in sorted(pairs.items()):
            parts = []
            for variant in ("unfused", "fused"):
                b = v.get(variant)
                if b:
                    parts.append("%s %s %s kernels %s" % (variant, "match" if b["match"] else "MISMATCH",
                                                          b["kernels"], fmt_ns(b["kernel_ns_per_round"])))
            u, f = v.get("unfused", {}).get("kernel_ns_per_round"), v.get("fused", {}).get("kernel_ns_per_round")
            ratio = " (unfused/fused %.2fx)" % (u / f) if u and f else ""
            lines.append("  %-32s %s%s" % (name, "; ".join(parts), ratio))
    for program, t in s["traces"].items():
        if "why" in t:
            lines.append("%s trace: NOT RUN: %s" % (program, t["why"]))
            continue
        lines.append("%s trace: %s: %s kernels, %s memcpys, %s runtime + %s driver API calls, %s/%s ac2g, %s dropped" % (
            program, "complete" if t.get("ok") else "INCOMPLETE", t.get("kernels"), t.get("memcpys"),
            t.get("runtime_api"), t.get("driver_api"), t.get("ac2g_starts"), t.get("ac2g_finishes"),
            t.get("dropped_records")))
    o = s["overhead"]
    if o and "why" in o:
        lines.append("collector overhead: NOT MEASURED: " + o["why"])
    elif o:
        lines.append("collector overhead: %s launches, %.4f s untraced vs %.4f s traced (medians of %d): %+.2f %% "
                     "(target <= 3 %%)" % (o["launches"], o["untraced_s"], o["traced_s"], o["runs"],
                                           o["overhead_percent"]))
        for name, w in sorted(o.get("workloads", {}).items()):
            lines.append("  %-15s %7s %s, untraced %.4f s; %s" % (
                name, w["count"], {"launch": "launches", "step": "steps"}.get(w["unit"], w["unit"]), w["untraced_s"],
                "; ".join(
                    "--api=%s %+.1f %% (%+.2f us per %s)" % (api, a["overhead_percent"], a["us_per_item"], w["unit"])
                    for api, a in sorted(w["api"].items()))))
        if "trace_kernels" in o:
            lines.append("  traced run's trace: %s kernels, %s records dropped" % (o["trace_kernels"],
                                                                               o["trace_dropped_records"]))
    bw = s["bandwidth"]
    if bw and "why" in bw:
        lines.append("bandwidth: NOT MEASURED: " + bw["why"])
    elif bw:
        lines.append("device-to-device copy: %s GB/s" % bw.get("copy_gb_per_s"))
        for k in bw.get("kernels", []):
            lines.append("  %-28s %-7s %8.1f MB %10s  %7.1f GB/s  %5.1f %% of copy" % (
                k["name"], k["kind"], k["bytes"] / 1e6, fmt_ns(k["median_ns"]), k["gb_per_s"] or 0,
                k.get("percent_of_copy") or 0))
        lines.append("  slowest memory-bound fused kernel: %s %% of copy bandwidth (target >= 70 %%)" %
                     ("-" if bw.get("min_percent_of_copy") is None else "%.1f" % bw["min_percent_of_copy"]))
    prepared = s.get("prepared")
    if prepared:
        lines.append("prepared modules: " + ", ".join("%d %s" % (len(v), k) for k, v in prepared.items()))
    lines.append("")
    if not s["gpu_present"]:
        lines.append("NO GPU: nothing ran (%s)" % env.get("why", "no GPU found"))
    else:
        lines.append("ran: " + ", ".join(s["ran"]))
        lines.append("result: " + ("all checks passed" if s["ok"] else "FAILED: " + "; ".join(s["failures"])))
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compare")
    c.add_argument("bundle")
    c.add_argument("outputs")
    c.add_argument("reference")
    c.add_argument("-o")
    t = sub.add_parser("trace")
    t.add_argument("trace")
    t.add_argument("--want-memcpy", action="store_true")
    t.add_argument("-o")
    k = sub.add_parser("kernels")
    k.add_argument("trace")
    k.add_argument("bundle")
    k.add_argument("--rounds", type=int, help="runs of the module in the trace (gpurun -n); needed when every "
                   "kernel is inside a loop or branch")
    k.add_argument("-o")
    b = sub.add_parser("bandwidth")
    b.add_argument("copy")
    b.add_argument("kernels", nargs="+")
    b.add_argument("-o")
    s = sub.add_parser("summary")
    s.add_argument("results")
    s.add_argument("--prepared", help="the prepared folder, for its manifest.tsv")
    args = p.parse_args()
    return {"compare": cmd_compare, "trace": cmd_trace, "kernels": cmd_kernels, "bandwidth": cmd_bandwidth, "summary": cmd_summary}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
