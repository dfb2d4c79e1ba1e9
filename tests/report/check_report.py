"""Checks `kb-submit report` (json, csv, md) and `kb-submit export` against the HDF5 files, read
independently with h5py: every evaluated candidate is in each output, with its status.
Usage: check_report.py RESULTS_DIR OUT_DIR"""
import csv
import glob
import json
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
hostile = [c for c in seen.values() if c["name"] == "hostile"]
if not hostile or "</script>" not in hostile[0]["source"]:
    fail("report.json lost the hostile seed's source text")
funnel = rep["funnel"]
if [f["name"] for f in funnel] != ["compile", "smoke", "screen", "full"]:
    fail(f"funnel: {funnel}")
if funnel[0]["evaluated"] < funnel[-1]["evaluated"]:
    fail(f"funnel widens: {funnel}")

with open(os.path.join(out, "report.csv"), newline="", encoding="utf-8") as f:
    rows = list(csv.DictReader(f))
ids = {r["candidate"]: r for r in rows}
for cid, (task, name, status) in evaluated.items():
    if cid not in ids or ids[cid]["status"] != status or ids[cid]["task"] != task:
        fail(f"report.csv lacks {cid} ({task}/{name}/{status}): {ids.get(cid)}")

md = open(os.path.join(out, "report.md"), encoding="utf-8").read()
if not md.startswith("# Campaign rep\n") or "## Tier funnel" not in md:
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
    ncu = l["NCU_Profile"]
    if ncu is not None and ncu.get("lts__t_sector_hit_rate.pct") != 40.0:
        fail(f"NCU_Profile of {l['Kernel_Name']}: {ncu}")
profiled = [l for l in lines if l["NCU_Profile"] is not None]
if not profiled:
    fail("no export line has an NCU_Profile (profile_runner posted some)")
print(f"report: {len(evaluated)} evaluated candidates in json, csv, md and export")
