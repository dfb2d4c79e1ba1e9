#!/usr/bin/env python3
"""KernelBench over every committed GPU table at once (issue 14): for each task the row of the
newest bench/results/gpu-tests/h[12]00-*kernelbench*-identity.json that has both seeds' verdicts
(kb_missing.py's rule, but a row that measured nothing of its compile seed does not replace
one that did), then per KernelBench level the identity's agreement with eager and the
compile seed's fast_p (the share of the level's tasks, 100, 100 and 50, that are correct and
more than p times faster; a task without a row, not ok, or ok without a full-tier time (the run
ended before its full tier: counted apart) counts as not correct) against torch
eager and against torch.compile, with the geometric mean over the correct ones. The rows come
from several commits and two cards (the table names which); each speedup is a ratio measured
on one card in one evaluation. Prints a table, then one JSON line. Standard library only.
usage: kb_union.py"""
import glob
import importlib.util
import json
import math
import os
import sys

LEVEL_SIZE = {1: 100, 2: 100, 3: 50}
PS = (0, 1, 1.5, 2)


def load_missing():
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("kb_missing", os.path.join(here, "kb_missing.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def measured(r):
    """Whether the row says something of its compile seed: a verdict that is not infra_error,
    and for an ok one its full-tier time."""
    return r["compile_status"] != "infra_error" and (r["compile_status"] != "ok" or
                                                      bool(r.get("compile_x")))


def latest_rows(root, age):
    """{task: (row, table file name)} of the newest table with both verdicts, unless that row
    measured nothing of its compile seed where an older one did (an infra_error, or an ok whose
    call ended before its full tier: on the 80 GB card six level-1 tasks run out of device
    memory that ran on the 141 GB one)."""
    latest = {}
    for f in sorted(glob.glob(os.path.join(root, "bench/results/gpu-tests/"
                                           "h[12]00-*kernelbench*-identity.json")), key=age):
        for r in json.load(open(f))["rows"]:
            old = latest.get(r["task"])
            if (r.get("identity_status") and r.get("compile_status") and
                    (old is None or measured(r) or not measured(old[0]))):
                latest[r["task"]] = (r, os.path.basename(f))
    return latest


def level_of(task):
    return int(task[1]) if task.startswith("l") and task[1:2].isdigit() else None


def fast_p(xs, size):
    """{"correct", "geomean", "fast_<p>"} of the speedups `xs` (correct tasks) over `size`."""
    out = {"correct": len(xs), "geomean": (math.exp(sum(math.log(x) for x in xs) / len(xs))
                                           if xs else None)}
    for p in PS:
        out["fast_%g" % p] = sum(1 for x in xs if x > p) / size
    return out


def main():
    if len(sys.argv) != 1:
        sys.exit(__doc__)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    latest = latest_rows(root, load_missing().age)
    levels = []
    for lv, size in sorted(LEVEL_SIZE.items()):
        rows = [(r, f) for t, (r, f) in latest.items() if level_of(t) == lv]
        ident = [r["identity_x"] for r, _ in rows
                 if r["identity_status"] == "ok" and r.get("identity_x")]
        eager, comp, untimed = [], [], 0
        for r, _ in rows:
            untimed += r["compile_status"] == "ok" and not r.get("compile_x")
            if r["compile_status"] != "ok" or not r.get("compile_x"):
                continue
            eager.append(r["compile_x"])
            if r.get("compile_us") and r.get("compile_seed_us"):
                comp.append(r["compile_us"] / r["compile_seed_us"])
        cards = {}
        for _, f in rows:
            cards[f[:4]] = cards.get(f[:4], 0) + 1
        levels.append({"level": lv, "tasks": size, "covered": len(rows),
                       "identity_timed": len(ident),
                       "identity_in_band": sum(1 for x in ident if 0.97 <= x <= 1.03),
                       "compile_ok_untimed": untimed,
                       "compile_vs_eager": fast_p(eager, size),
                       "compile_vs_compile": fast_p(comp, len(comp) or 1),
                       "cards": cards, "tables": len(set(f for _, f in rows))})
    print("level tasks covered  identity in 0.97-1.03  compile seed vs eager: timed ok (ok, not "
          "timed)  geomean  fast_0  fast_1  fast_1.5  fast_2   rows by card")
    for L in levels:
        e = L["compile_vs_eager"]
        print("%5d %5d %7d   %6d of %-6d        %30d (%d)  %7s  %6.2f  %6.2f  %8.2f  %6.2f   %s" % (
            L["level"], L["tasks"], L["covered"], L["identity_in_band"], L["identity_timed"],
            e["correct"], L["compile_ok_untimed"],
            "%.3fx" % e["geomean"] if e["geomean"] else "-", e["fast_0"],
            e["fast_1"], e["fast_1.5"], e["fast_2"],
            ", ".join("%s %d" % kv for kv in sorted(L["cards"].items()))))
    print("compile seed against torch.compile (correct ones): " + "; ".join(
        "level %d %s (%d)" % (L["level"], "%.3fx" % L["compile_vs_compile"]["geomean"]
                              if L["compile_vs_compile"]["geomean"] else "-",
                              L["compile_vs_compile"]["correct"]) for L in levels))
    print(json.dumps({"bench": "kb_union", "levels": levels}))


if __name__ == "__main__":
    main()
