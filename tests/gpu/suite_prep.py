#!/usr/bin/env python3
"""The sandbox's task preparations over a campaign, per task, from the runner's debug log
(KB_LOG=debug; tests/gpu/suite.sh keeps it as suite-runner-0.log): each "task T: prepared in
the confined worker in S s (M MiB; ... N dropped for room[; kept above the share ...])" line
is one preparation (docs/sandbox.md, "prepare"; runner/sandbox/prep_keep.c decides what stays).
Prints one row per task (preparations, seconds, MiB, times kept above the share), then the
totals and one JSON line. Standard library only (the GPU machine installs nothing).
usage: suite_prep.py RUNNER_LOG [WORKER]   (WORKER: confined (default) or trusted)"""
import json
import re
import sys

PREP = re.compile(r"task (\S+): prepared in the (\w+) worker in ([\d.]+) s \(([\d.]+) MiB; "
                  r"the worker's prepared tasks ([\d.]+) MiB, (\d+) dropped for room(; kept above)?")


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    worker = sys.argv[2] if len(sys.argv) == 3 else "confined"
    rows = {}
    for line in open(sys.argv[1], errors="replace"):
        m = PREP.search(line)
        if not m or m.group(2) != worker:
            continue
        r = rows.setdefault(m.group(1), {"n": 0, "s": 0.0, "mib": 0.0, "dropped": 0, "over": 0})
        r["n"] += 1
        r["s"] += float(m.group(3))
        r["mib"] = float(m.group(4))
        r["dropped"] += int(m.group(6))
        r["over"] += 1 if m.group(7) else 0
    print("# task          preparations  seconds  MiB_per_task  kept_above  dropped_for_it")
    for t, r in sorted(rows.items(), key=lambda kv: -kv[1]["n"]):
        print("%-15s %12d %8.2f %13.1f %11d %15d" % (t, r["n"], r["s"], r["mib"], r["over"],
                                                    r["dropped"]))
    total = {"preparations": sum(r["n"] for r in rows.values()),
             "seconds": round(sum(r["s"] for r in rows.values()), 3),
             "dropped": sum(r["dropped"] for r in rows.values()), "worker": worker}
    print("# %(preparations)d preparations, %(seconds).2f s, %(dropped)d tasks dropped for room"
          % total)
    print(json.dumps({"bench": "suite_prep", **total, "tasks": rows}))


if __name__ == "__main__":
    main()
