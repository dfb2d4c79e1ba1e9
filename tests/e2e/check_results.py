"""Reads a campaign's HDF5 files with h5py and checks them against the layout's promises.

usage: check_results.py RESULTS_DIR --campaign ID --tasks T... [--min-evaluations N]
                        [--done N] [--all-ok]
Checks, per task file: format and ids; every (candidate, tier, attempt) once; every evaluation's
candidate in /candidates with its source; candidate summary columns agree with the rows; /best
names a stored candidate; summary.json agrees. Tests ask for at least 6 evaluations per task of
two seeds: both compile and smoke, the baseline climbs to full; the other seed climbs only when
the promotion policy ranks it in the top third, which depends on timings. --done: total evaluation rows across the files
equals the number of items redis counted done plus dead-lettered (nothing lost, nothing twice).
Prints one JSON line of counts.
"""
import argparse
import json
import math
import os
import sys

import h5py


def s(b):
    return b.decode("utf-8") if isinstance(b, bytes) else str(b)


def fail(msg):
    print(f"check_results: {msg}", file=sys.stderr)
    sys.exit(1)


def check_file(path, campaign, task, all_ok, baseline_tier):
    with h5py.File(path, "r") as f:
        if s(f.attrs["format"]) != "kernelbrain.h5/3":
            fail(f"{path}: format {f.attrs['format']!r}")
        if s(f.attrs["campaign"]) != campaign or s(f.attrs["task"]) != task:
            fail(f"{path}: wrong campaign/task attributes")
        spec = json.loads(f["task/spec_json"][()].tobytes().decode())
        if spec["id"] != task:
            fail(f"{path}: /task/spec_json is for {spec['id']}")
        cands = f["candidates"][:]
        evals = f["evaluations"][:]
        heap = f["sources/data"][:].tobytes()
        ids = {}
        for c in cands:
            cid = s(c["id"])
            if cid in ids:
                fail(f"{path}: candidate {cid} stored twice")
            src = heap[c["source_offset"]:c["source_offset"] + c["source_len"]].decode()
            if "kb_forward" not in src:
                fail(f"{path}: source of {cid} does not define kb_forward")
            ids[cid] = c
        keys = set()
        charges = set()
        per_cand = {}
        for e in evals:
            key = (s(e["candidate"]), int(e["tier"]), int(e["attempt"]))
            if key in keys:
                fail(f"{path}: evaluation {key} stored twice")
            keys.add(key)
            charge = s(e["charge_id"])
            if charge in charges:
                fail(f"{path}: charge {charge} recorded twice")
            charges.add(charge)
            if key[0] not in ids:
                fail(f"{path}: evaluation of unknown candidate {key[0]}")
            per_cand.setdefault(key[0], []).append(e)
            if all_ok and s(e["status"]) != "ok":
                fail(f"{path}: {key} has status {s(e['status'])}: {s(e['reason'])}")
            if s(e["status"]) == "ok" and e["tier"] > 0 and not (e["samples"] > 0 and e["median_us"] > 0):
                fail(f"{path}: timed tier {key} without timing")
        for cid, c in ids.items():
            rows = per_cand.get(cid, [])
            if int(c["n_evaluations"]) != len(rows):
                fail(f"{path}: {cid} n_evaluations {c['n_evaluations']} != {len(rows)}")
            if rows:
                best = max(rows, key=lambda r: (int(r["tier"]), int(r["attempt"])))
                if int(c["best_tier"]) != int(best["tier"]) or s(c["status"]) != s(best["status"]):
                    fail(f"{path}: {cid} best_tier/status disagree with its rows")
        if baseline_tier is not None and spec.get("baseline"):
            base = [cid for cid, c in ids.items() if s(c["name"]) == spec["baseline"]]
            if not any(int(e["tier"]) == baseline_tier and s(e["status"]) == "ok"
                       for cid in base for e in per_cand.get(cid, [])):
                seen = [(int(e["tier"]), int(e["attempt"]), s(e["status"]), s(e["reason"]))
                        for cid in base for e in per_cand.get(cid, [])]
                fail(f"{path}: baseline {spec['baseline']} never passed tier {baseline_tier}; "
                     f"its rows (tier, attempt, status, reason): {seen}")
        check_torch(path, f, evals)
        b = f["best"].attrs
        if s(b["candidate"]) and s(b["candidate"]) not in ids:
            fail(f"{path}: /best names an unknown candidate")
        speedup = float(b["speedup"])
        return len(cands), len(evals), s(b["name"]), speedup


def check_torch(path, f, evals):
    """Format 3: the torch columns are NaN except on ok full-tier rows, and /torch agrees."""
    top = max([int(e["tier"]) for e in evals] or [0])
    for kind in ("eager", "compile"):
        col = [float(e["torch_%s_us" % kind]) for e in evals]
        for e, v in zip(evals, col):
            if not math.isnan(v) and (v <= 0 or s(e["status"]) != "ok" or int(e["tier"]) != top):
                fail(f"{path}: torch_{kind}_us {v} on a {s(e['status'])} row at tier {e['tier']}")
        v = sorted(x for x in col if not math.isnan(x))
        a = f["torch"].attrs
        if int(a[kind + "_n"]) != len(v):
            fail(f"{path}: /torch {kind}_n {a[kind + '_n']}, the column has {len(v)}")
        med = float(a[kind + "_median_us"])
        if (not v and not math.isnan(med)) or (v and abs(med - v[(len(v) - 1) // 2]) > 1e-9 and
                                               abs(med - (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2) > 1e-9):
            fail(f"{path}: /torch {kind}_median_us {med} is not the median of {v}")


def check_summary_torch(summary):
    """summary.json: torch_eager_us / torch_compile_us and the best's speedups, null or > 0."""
    for t in summary["tasks"]:
        for key in ("torch_eager_us", "torch_compile_us", "best_speedup_eager",
                    "best_speedup_compile"):
            if key not in t or (t[key] is not None and not t[key] > 0):
                fail(f"summary.json task {t['task']}: {key} is {t.get(key)!r}")
        for kind in ("eager", "compile"):
            if t["torch_%s_us" % kind] is None and t["best_speedup_" + kind] is not None:
                fail(f"summary.json task {t['task']}: a speedup over {kind} without its time")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--campaign", required=True)
    ap.add_argument("--tasks", nargs="+", required=True)
    ap.add_argument("--min-evaluations", type=int, default=1)
    ap.add_argument("--done", type=int)
    ap.add_argument("--all-ok", action="store_true")
    ap.add_argument("--baseline-tier", type=int,
                    help="the baseline seed must have passed this tier (it always climbs)")
    a = ap.parse_args()
    total = 0
    out = {}
    for task in a.tasks:
        path = os.path.join(a.dir, f"{task}.h5")
        n_c, n_e, best, speedup = check_file(path, a.campaign, task, a.all_ok, a.baseline_tier)
        if n_e < a.min_evaluations:
            fail(f"{path}: {n_e} evaluations, want at least {a.min_evaluations}")
        total += n_e
        out[task] = {"candidates": n_c, "evaluations": n_e, "best": best,
                     "speedup": None if math.isnan(speedup) else round(speedup, 3)}
    if a.done is not None and total != a.done:
        fail(f"{total} evaluation rows in the files, redis counted {a.done} items done")
    summary = json.load(open(os.path.join(a.dir, "summary.json")))
    if summary["campaign"] != a.campaign or sorted(t["task"] for t in summary["tasks"]) != sorted(a.tasks):
        fail("summary.json does not match the files")
    check_summary_torch(summary)
    print(json.dumps({"evaluations": total, "tasks": out}))


if __name__ == "__main__":
    main()
