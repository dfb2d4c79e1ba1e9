#!/usr/bin/env python3
"""Per-task table of a suite campaign (tests/gpu/suite.sh) from `kb-submit report --format json`:
the best kernel's full-tier median against the naive seed's and the tunable seed's (default knobs)
full-tier medians, all from the same campaign on the same GPU. Prints a table and a final JSON line.
usage: suite_table.py REPORT.json"""
import json
import math
import sys


def full_median(cand):
    """Median (us) of the candidate's full-tier evaluation that passed, else None."""
    best = None
    for e in cand.get("evaluations", []):
        if e.get("tier_name") == "full" and e.get("status") == "ok" and e.get("median_us"):
            best = e["median_us"] if best is None else min(best, e["median_us"])
    return best


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    report = json.load(open(sys.argv[1]))
    rows, over_naive, over_tuned = [], [], []
    for task in report["tasks"]:
        by_name = {c["name"]: c for c in task["candidates"]}
        timed = [(full_median(c), c) for c in task["candidates"]]
        timed = [(m, c) for m, c in timed if m is not None]
        if not timed:
            rows.append((task["task"], None, None, None, "", 0))
            continue
        best_m, best = min(timed, key=lambda mc: mc[0])
        naive = full_median(by_name.get("naive", {}))
        tuned = full_median(by_name.get("tuned", {}))
        sn = naive / best_m if naive else None
        st = tuned / best_m if tuned else None
        if sn:
            over_naive.append(sn)
        if st:
            over_tuned.append(st)
        rows.append((task["task"], best_m, naive, tuned, best["name"], len(task["candidates"])))
    print("%-14s %5s %12s %12s %12s %9s %9s  %s" % ("task", "cands", "best us", "naive us",
          "tuned us", "x naive", "x tuned", "best kernel (knobs)"))
    for t, b, n, u, name, k in rows:
        f = lambda v: "%12.1f" % v if v else "%12s" % "-"
        r = lambda a: "%9.2f" % (a / b) if a and b else "%9s" % "-"
        print("%-14s %5d %s %s %s %s %s  %s" % (t, k, f(b), f(n), f(u), r(n), r(u), name))
    gm = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None
    print("geometric mean: %.2fx over naive (%d tasks), %.2fx over the tunable seed's defaults "
          "(%d tasks)" % (gm(over_naive) or 0, len(over_naive), gm(over_tuned) or 0,
                          len(over_tuned)))
    print(json.dumps({"tasks": len(rows), "geomean_over_naive": gm(over_naive),
                      "geomean_over_tuned_default": gm(over_tuned)}))


main()
