#!/usr/bin/python3
"""Exports a campaign's HDF5 result files as a kb-bench-ladder pool (bench/data/README.md).

usage: export_pool.py RESULTS_DIR [-o POOL.csv] [--tasks T ...]
       export_pool.py --version

RESULTS_DIR is results/<campaign>/ (one <task>.h5 per task, schemas/hdf5-layout.md). Reads
/task/spec_json (the baseline seed's name), /candidates and /evaluations with h5py (Debian's
/usr/bin/python3 has it), up to the committed counts, and writes one row per candidate:

  true_us     its median at the highest tier it passed with a timing (the top tier when it got
              there); a candidate that never passed a timed tier gets the baseline's time (it
              fails before any timing, so the value is never used)
  noise_k     relative standard error of its median at tier k: 1.2533 * sigma / median /
              sqrt(samples), sigma from p10..p90 (or the noise column); raised to the observed
              gap |ln(median_k / true_us)| when it also has the top tier's median (the bench
              draws log-normal measurements, so a log gap is one draw of it); where a tier
              was not run, the median of the other candidates' values at that tier
  failure     the status of its first failed evaluation (infra_error is not the candidate's
              fault and is ignored), at that evaluation's tier; ok otherwise

Tiers are columns by name when the campaign used the default tier names (smoke -> noise_1,
screen -> noise_2, full -> noise_3, as kb-bench-ladder's default ladder), else by index.

Caveat: a campaign's own promotion policy decided which candidates reached the top tier, so a
pruned candidate's true time comes from a cheaper, noisier tier. For an unbiased pool, record
the campaign with "search": {"eta": 1} (every candidate climbs every tier) and export that.
Files written by a scheduler that is still running are read as a SWMR reader.
"""
import argparse
import glob
import json
import math
import os
import statistics
import sys

# the loader beside this script (tools/, build/bin): its reader opens a task file read-only,
# as an SWMR reader when the scheduler holds it, with HDF5's read attempts bounded
from kbresults import open_task_file

KB_VERSION = "unknown"  # the build's copy in build/bin says "<version> (commit <sha>)"

DEFAULT_NOISE = {1: 0.15, 2: 0.035, 3: 0.007}
DEFAULT_TIERS = {"compile": 0, "smoke": 1, "screen": 2, "full": 3}


def s(b):
    return b.decode("utf-8") if isinstance(b, bytes) else str(b)


def rel_se(e):
    n = int(e["samples"])
    med = float(e["median_us"])
    if n <= 0 or not med > 0:
        return None
    p10, p90 = float(e["p10_us"]), float(e["p90_us"])
    if p90 > p10 > 0:
        sigma = (p90 - p10) / 2.5631
    elif float(e["noise"]) > 0:
        sigma = float(e["noise"]) * med
    else:
        return None
    return 1.2533 * sigma / med / math.sqrt(n)


def export_task(path):
    with open_task_file(path) as f:
        commit = f.attrs["commit"]
        n_c, n_e = int(commit["candidates"]), int(commit["evaluations"])
        task = s(f.attrs["task"])
        spec = json.loads(f["task/spec_json"][()].tobytes().decode())
        cands = f["candidates"][:n_c]
        evals = f["evaluations"][:n_e]
    base_name = spec.get("baseline")
    rows = {}
    for c in cands:
        rows[s(c["id"])] = {"name": s(c["name"]), "generator": s(c["generator"]), "evals": []}
    names = {s(e["tier_name"]) for e in evals}
    by_name = names <= set(DEFAULT_TIERS)

    def column(e):
        return DEFAULT_TIERS[s(e["tier_name"])] if by_name else int(e["tier"])

    top = max([column(e) for e in evals] + [3 if by_name else 1])
    for e in evals:
        cid = s(e["candidate"])
        if cid in rows:
            rows[cid]["evals"].append(e)
    base_id = None
    for cid, r in rows.items():
        if r["generator"] == "seed" and r["name"] == base_name:
            base_id = cid
    out = []
    for cid, r in rows.items():
        ev = sorted(r["evals"], key=lambda e: (column(e), int(e["attempt"])))
        failure, fail_tier = "ok", -1
        for e in ev:
            st = s(e["status"])
            if st not in ("ok", "infra_error"):
                failure, fail_tier = st, column(e)
                break
        timed = {}
        for e in ev:
            if s(e["status"]) == "ok" and int(e["samples"]) > 0 and float(e["median_us"]) > 0:
                timed[column(e)] = e  # the latest attempt wins
        out.append({"cid": cid, "name": r["name"], "timed": timed, "failure": failure,
                    "fail_tier": fail_tier, "baseline": int(cid == base_id)})
    return task, top, out, base_id


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("-o", "--output", default="-")
    ap.add_argument("--tasks", nargs="+")
    ap.add_argument("--version", action="version", version="export_pool.py %s" % KB_VERSION)
    a = ap.parse_args()
    paths = sorted(glob.glob(os.path.join(a.dir, "*.h5")))
    if a.tasks:
        paths = [os.path.join(a.dir, f"{t}.h5") for t in a.tasks]
    if not paths:
        sys.exit(f"export_pool: no .h5 files in {a.dir}")
    tasks = []
    for p in paths:
        try:
            tasks.append(export_task(p))
        except KeyError as e:  # h5py's for an object whose header does not read back
            sys.exit(f"export_pool: {p}: cannot read: {e.args[0] if e.args else e}")
        except OSError as e:  # a file HDF5 cannot open (named)
            sys.exit(f"export_pool: {e}")
    n_tiers = max(top for _, top, _, _ in tasks) + 1
    lines = [f"# kernelbrain ladder pool, format 1 (bench/data/README.md); exported by "
             f"tools/export_pool.py from {os.path.abspath(a.dir)}",
             "task,candidate,baseline,true_us," +
             ",".join(f"noise_{k}" for k in range(1, n_tiers)) + ",failure,fail_tier"]
    for task, top, rows, base_id in tasks:
        if base_id is None:
            print(f"export_pool: {task}: no baseline seed; task skipped", file=sys.stderr)
            continue
        base = next(r for r in rows if r["baseline"])
        if not base["timed"]:
            print(f"export_pool: {task}: the baseline was never timed; task skipped",
                  file=sys.stderr)
            continue
        base_true = float(base["timed"][max(base["timed"])]["median_us"])
        fill = {}
        for k in range(1, n_tiers):
            vals = [rel_se(r["timed"][k]) for r in rows if k in r["timed"]]
            vals = [v for v in vals if v is not None]
            fill[k] = statistics.median(vals) if vals else DEFAULT_NOISE.get(k, 0.01)
        for r in rows:
            t = r["timed"]
            true_us = float(t[max(t)]["median_us"]) if t else base_true
            noise = []
            for k in range(1, n_tiers):
                v = rel_se(t[k]) if k in t else None
                if v is None:
                    v = fill[k]
                if k in t and (n_tiers - 1) in t and k != n_tiers - 1:
                    v = max(v, abs(math.log(float(t[k]["median_us"]) / true_us)))
                noise.append(f"{v:.5f}")
            name = r["name"] if r["name"] else r["cid"][:16]
            name = "".join(ch if ch not in ",\n" else "_" for ch in name)[:63]
            lines.append(f"{task},{name},{r['baseline']},{true_us:.3f}," + ",".join(noise) +
                         f",{r['failure']},{r['fail_tier']}")
    text = "\n".join(lines) + "\n"
    if a.output == "-":
        sys.stdout.write(text)
    else:
        with open(a.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
