"""Checks `kb-submit report` (json, csv, md) and `kb-submit export` against the HDF5 files, read
independently with h5py: every evaluated candidate is in each output, with its status.
Usage: check_report.py RESULTS_DIR OUT_DIR"""
import csv
import glob
import json
import math
import os
import sys

import h5py

results, out = sys.argv[1:3]


def fail(msg):
    sys.exit(f"FAIL: {msg}")


def s(b):
    return b.decode("utf-8") if isinstance(b, bytes) else str(b)


evaluated = {}  # candidate id -> (task, name, status)
for path in sorted(glob.glob(os.path.join(results, "*.h5"))):
    with h5py.File(path, "r") as f:
        task = s(f.attrs["task"])
        n = int(f.attrs["commit"]["candidates"])
        for row in f["candidates"][:n]:
            if int(row["n_evaluations"]) > 0:
                evaluated[s(row["id"])] = (task, s(row["name"]), s(row["status"]))
if len(evaluated) < 5:
    fail(f"only {len(evaluated)} evaluated candidates in {results}")

rep = json.load(open(os.path.join(out, "report.json"), encoding="utf-8"))
if rep["schema"] != "kernelbrain.report/1" or rep["campaign"] != "rep" or rep["state"] != "done":
    fail(f"report.json header: {rep['schema']} {rep['campaign']} {rep['state']}")
seen = {}
for t in rep["tasks"]:
    ranks = [c["rank"] for c in t["candidates"]]
    if ranks != list(range(1, len(ranks) + 1)):
        fail(f"ranks of {t['task']}: {ranks}")
    for c in t["candidates"]:
        seen[c["candidate"]] = c
        if not c["evaluations"] and c["candidate"] in evaluated:
            fail(f"{c['candidate']} has no evaluations in report.json")
        if c["speedup"] is not None and not c["speedup"] > 0:
            fail(f"bad speedup {c}")
for cid, (task, name, status) in evaluated.items():
    c = seen.get(cid)
    if c is None:
        fail(f"report.json lacks {cid} ({task}/{name})")
    if c["status"] != status or c["name"] != name:
        fail(f"report.json {cid}: {c['status']}/{c['name']}, h5py says {status}/{name}")
    if "source" not in c or "kb_forward" not in c["source"]:
        fail(f"report.json {cid}: no source")
# the same-run baseline's median and ratio of each evaluation, as the file has them (h5py)
same_run = {}  # (candidate, tier, attempt) -> (baseline_median_us, same_run_speedup)
for path in sorted(glob.glob(os.path.join(results, "*.h5"))):
    with h5py.File(path, "r") as f:
        for row in f["evaluations"][:]:
            same_run[(s(row["candidate"]), int(row["tier"]), int(row["attempt"]))] = \
                (float(row["baseline_median_us"]), float(row["same_run_speedup"]))
timed_again = 0
for c in seen.values():
    for e in c["evaluations"]:
        want = same_run.get((c["candidate"], e["tier"], e["attempt"]))
        got = (e.get("baseline_median_us"), e.get("same_run_speedup"))
        if want is None or "same_run_speedup" not in e:
            fail(f"report.json {c['candidate']} tier {e['tier']}: no same-run fields {e}")
        for w, g in zip(want, got):
            if (g is None) != math.isnan(w) or (g is not None and abs(g - w) > 1e-6 * abs(w)):
                fail(f"report.json {c['candidate']} tier {e['tier']}: same-run {got}, "
                     f"h5py says {want}")
        timed_again += got[1] is not None
print(f"report.json: {timed_again} evaluations with a same-run baseline, as in the files")
hostile = [c for c in seen.values() if c["name"] == "hostile"]
if not hostile or "</script>" not in hostile[0]["source"]:
    fail("report.json lost the hostile seed's source text")
funnel = rep["funnel"]
if [f["name"] for f in funnel] != ["compile", "smoke", "screen", "full"]:
    fail(f"funnel: {funnel}")
if funnel[0]["evaluated"] < funnel[-1]["evaluated"]:
    fail(f"funnel widens: {funnel}")

# torch baselines: sum has a torch_reference, timed at the full tier after its ok evaluations
with h5py.File(os.path.join(results, "sum.h5"), "r") as f:
    ne = int(f.attrs["commit"]["evaluations"])
    ev = f["evaluations"][:ne]
    eager = [float(e["torch_eager_us"]) for e in ev
             if s(e["tier_name"]) == "full" and s(e["status"]) == "ok"]
    if not eager or not all(x > 0 for x in eager):
        fail(f"sum.h5: full-tier ok rows without a torch eager time: {eager}")
    if any(not math.isnan(float(e["torch_eager_us"])) for e in ev if s(e["tier_name"]) != "full"):
        fail("sum.h5: a torch time below the full tier")
    torch_attrs = f["torch"].attrs
    if int(torch_attrs["eager_n"]) != len(eager) or int(torch_attrs["compile_n"]) != 0:
        fail(f"sum.h5 /torch: {dict(torch_attrs)}, the column has {len(eager)}")
    eager_median = float(torch_attrs["eager_median_us"])
t_sum = [t for t in rep["tasks"] if t["task"] == "sum"][0]
if abs(t_sum["torch_eager_us"] - eager_median) > 1e-9 or t_sum["torch_compile_us"] is not None:
    fail(f"report.json sum: torch {t_sum['torch_eager_us']} {t_sum['torch_compile_us']}")
for c in t_sum["candidates"]:
    full = [e for e in c["evaluations"] if e["tier_name"] == "full" and e["status"] == "ok"]
    # against the eager timed with that evaluation (the trusted worker's, right after it), not
    # the task's median over evaluations
    want = full[-1]["torch_eager_us"] / full[-1]["median_us"] if full else None
    if (want is None) != (c["speedup_eager"] is None) or (
            want is not None and abs(c["speedup_eager"] - want) > 1e-9 * want):
        fail(f"report.json sum {c['name']}: speedup_eager {c['speedup_eager']}, want {want}")
summary = {t["task"]: t for t in json.load(open(os.path.join(results, "summary.json")))["tasks"]}
if not (summary["sum"]["torch_eager_us"] or 0) > 0 or summary["sum"]["torch_compile_us"] is not None \
        or summary["matmul"]["torch_eager_us"] is not None:
    fail(f"summary.json torch times: {summary['sum']} {summary['matmul']}")
full_rows = [r for r in summary["sum"]["leaderboard"] if r["tier_name"] == "full"]
if not full_rows or not (summary["sum"]["best_speedup_eager"] or 0) > 0 or any(
        not (r["speedup_eager"] or 0) > 0 for r in full_rows):
    fail(f"summary.json sum speedups over torch eager: {summary['sum']}")
eager_rows = [r for r in rep["fast_p"]["eager"] if r["level"] is None]
if not eager_rows or eager_rows[0]["tasks"] != 1 or rep["fast_p"]["compile"][-1]["tasks"] != 0:
    fail(f"report.json fast_p: {rep['fast_p']}")

with open(os.path.join(out, "report.csv"), newline="", encoding="utf-8") as f:
    rows = list(csv.DictReader(f))
ids = {r["candidate"]: r for r in rows}
for cid, (task, name, status) in evaluated.items():
    if cid not in ids or ids[cid]["status"] != status or ids[cid]["task"] != task:
        fail(f"report.csv lacks {cid} ({task}/{name}/{status}): {ids.get(cid)}")

md = open(os.path.join(out, "report.md"), encoding="utf-8").read()
if not md.startswith("# Campaign rep\n") or "## Tier funnel" not in md or \
        "## fast_p against torch eager" not in md:
    fail("report.md header")
for cid, (task, name, status) in evaluated.items():
    row = [l for l in md.splitlines() if f"| {cid[:12]} |" in l]
    if len(row) != 1 or row[0].count("|") != 11:
        fail(f"report.md row of {cid}: {row}")

archive = ["Op_Name", "Level_ID", "Task_ID", "Kernel_Name", "CUDA_Runtime",
           "PyTorch_Native_Runtime", "PyTorch_Compile_Runtime", "CUDA_Speedup_Native",
           "CUDA_Speedup_Compile", "CUDA_Code", "PyTorch_Code_Module", "Correct", "Max_Diff",
           "Error", "NCU_Profile"]
lines = [json.loads(l) for l in open(os.path.join(out, "export.jsonl"), encoding="utf-8")]
if len(lines) != len(evaluated):
    fail(f"export has {len(lines)} lines for {len(evaluated)} evaluated candidates")
for l in lines:
    missing = [k for k in archive if k not in l]
    if missing:
        fail(f"export line lacks {missing}")
    task, name, status = evaluated[l["KB_Candidate"]]
    if l["Op_Name"] != task or l["Kernel_Name"] != name or l["Correct"] != (status == "ok"):
        fail(f"export line disagrees with the file: {l['Op_Name']} {l['Kernel_Name']} {l['Correct']}")
    if l["Correct"] and not (isinstance(l["CUDA_Runtime"], float) and l["CUDA_Runtime"] > 0):
        fail(f"correct candidate without a runtime: {l['Kernel_Name']}")
    if "kb_forward" not in l["CUDA_Code"]:
        fail("export line without the source")
    native = eager_median / 1000.0 if task == "sum" else None
    if (native is None) != (l["PyTorch_Native_Runtime"] is None) or (
            native is not None and abs(l["PyTorch_Native_Runtime"] - native) > 1e-12):
        fail(f"export {task}/{name}: PyTorch_Native_Runtime {l['PyTorch_Native_Runtime']}")
    if l["PyTorch_Compile_Runtime"] is not None or l["CUDA_Speedup_Compile"] is not None:
        fail(f"export {task}/{name}: a torch.compile number without torch.compile")
    ncu = l["NCU_Profile"]
    if ncu is not None and ncu.get("lts__t_sector_hit_rate.pct") != 40.0:
        fail(f"NCU_Profile of {l['Kernel_Name']}: {ncu}")
profiled = [l for l in lines if l["NCU_Profile"] is not None]
if not profiled:
    fail("no export line has an NCU_Profile (profile_runner posted some)")
print(f"report: {len(evaluated)} evaluated candidates in json, csv, md and export")
