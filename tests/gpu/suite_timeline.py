#!/usr/bin/env python3
"""Where a one-runner campaign's GPU waited, from its report alone (`kb-submit report --format
json`, e.g. tests/gpu/suite.sh's suite-report.json): the runner evaluates one item at a time, so
its evaluations at the running tiers, each [finished - cost_ms, finished], tile its time, and the
gaps between them are time the device had no candidate to run. Each gap is put down to
  - "first evaluation of a task": the task was prepared in the sandbox first (oracle build, input
    draws, oracle runs);
  - "claimed after the previous one ended": the runner had nothing to evaluate (the scheduler's
    promotions, the queue empty);
  - "the rest": everything between two evaluations of prepared tasks (the result's Redis call, the
    next build's wait, the sandbox's preparation of a task it had dropped, ...).
Prints the totals, the median gap per task, and the largest gaps. A measure of the wall time,
not of kernel time: cost_ms is the sandbox's whole evaluation (checks and timing included).
usage: suite_timeline.py REPORT.json [N_LARGEST]"""
import json
import statistics
import sys


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    largest = int(sys.argv[2]) if len(sys.argv) == 3 else 10
    report = json.load(open(sys.argv[1]))
    evs = []
    for task in report["tasks"]:
        for cand in task["candidates"]:
            for e in cand["evaluations"]:
                if e.get("finished") is not None and e.get("started") is not None:
                    evs.append(dict(e, task=task["task"], cand=cand["name"]))
    if not evs:
        sys.exit("no evaluations with start and finish times in " + sys.argv[1])
    evs.sort(key=lambda e: e["finished"])
    t0 = min(e["started"] for e in evs)
    t1 = max(e["finished"] for e in evs)
    running = [e for e in evs if e["tier"] > 0]
    busy = sum(e["cost_ms"] for e in running) / 1000.0
    print("%d evaluations (%d at running tiers) over %.1f s; inside the sandbox %.1f s (%.0f%%)"
          % (len(evs), len(running), t1 - t0, busy, 100 * busy / (t1 - t0)))
    seen, prev = set(), t0
    totals = {"first evaluation of a task": 0.0, "claimed after the previous one ended": 0.0,
              "the rest": 0.0}
    per_task, gaps = {}, []
    for e in running:
        start = e["finished"] - e["cost_ms"] / 1000.0
        gap = max(0.0, start - prev)
        if e["task"] not in seen:
            kind = "first evaluation of a task"
        elif e["started"] > prev + 0.001:
            kind = "claimed after the previous one ended"
        else:
            kind = "the rest"
        seen.add(e["task"])
        totals[kind] += gap
        per_task.setdefault(e["task"], []).append(gap)
        gaps.append((gap, kind, e["task"], e["tier"], e["cand"][:32], start - t0))
        prev = e["finished"]
    print("gaps between evaluations, %.1f s in all:" % sum(totals.values()))
    for kind, s in totals.items():
        print("  %-40s %7.1f s" % (kind, s))
    print("%-16s %6s %12s %10s" % ("task", "evals", "median gap", "sum"))
    for task, g in sorted(per_task.items(), key=lambda kv: -sum(kv[1])):
        print("%-16s %6d %10.3f s %8.1f s" % (task, len(g), statistics.median(g), sum(g)))
    print("largest gaps (s, kind, task, tier, candidate, at s):")
    for g in sorted(gaps, reverse=True)[:largest]:
        print("  %.3f  %s  %s  t%d  %s  %.1f" % g)


main()
