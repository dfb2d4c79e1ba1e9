#!/usr/bin/env python3
"""Where a campaign's evaluations spent their time in the sandbox, per tier, from the runner's
debug log (KB_LOG=debug; tests/gpu/suite.sh keeps it as suite-runner-0.log). Each evaluation the
sandbox answered logs one "eval: ..." line with its phases (docs/sandbox.md, "phases"), followed
by the runner's "item <candidate>:<tier>: ..." line that names its tier. Prints one row per tier:
evaluations, seconds in the sandbox, each phase summed, the metrics passes run (a metrics phase
over 5 ms) and the host's waits for the timed samples (one per chunk); then the same summed over
all tiers; then one comment line with the fresh samples per evaluation at each tier (the
runner's "eval: N fresh sample(s)" lines, issue 17). Standard library only (the GPU machine
installs nothing).
usage: suite_phases.py RUNNER_LOG [LABEL]"""
import re
import sys

EVAL = re.compile(r"eval: (\d+) call\(s\) per sample, (?:(\d+) wait\(s\) for the samples, )?"
                  r"([\d.]+) s in the sandbox \(load ([\d.]+), check ([\d.]+), warm-up ([\d.]+), "
                  r"samples ([\d.]+), fresh ([\d.]+), trace ([\d.]+), re-check ([\d.]+), "
                  r"metrics ([\d.]+)\)")
FRESH = re.compile(r"eval: (\d+) fresh sample\(s\) on unseen inputs")
ITEM = re.compile(r"item [0-9a-f]+:(\d+): claimed")
PHASES = ["load", "check", "warm-up", "samples", "fresh", "trace", "re-check", "metrics"]
NAMES = {1: "smoke", 2: "screen", 3: "full"}  # the default ladder (common/src/campaign.c)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    label = sys.argv[2] if len(sys.argv) == 3 else ""
    rows, pending, fresh = {}, None, None
    counts = {}  # tier -> fresh samples of each evaluation that logged them
    for line in open(sys.argv[1], errors="replace"):
        m = EVAL.search(line)
        if m:
            pending, fresh = m, None
            continue
        m = FRESH.search(line)
        if m:
            fresh = int(m.group(1))
            continue
        m = ITEM.search(line)
        if m and pending is not None:
            tier = int(m.group(1))
            r = rows.setdefault(tier, {"evals": 0, "sandbox": 0.0, "waits": 0, "passes": 0,
                                       **{p: 0.0 for p in PHASES}})
            r["evals"] += 1
            r["waits"] += int(pending.group(2) or 0)
            r["sandbox"] += float(pending.group(3))
            for i, p in enumerate(PHASES):
                r[p] += float(pending.group(4 + i))
            r["passes"] += float(pending.group(11)) > 0.005
            if fresh is not None:
                counts.setdefault(tier, []).append(fresh)
            pending, fresh = None, None
    head = "%-8s %6s %8s" % ("tier", "evals", "sandbox") + "".join(
        " %8s" % p for p in PHASES) + " %7s %6s" % ("passes", "waits")
    print("# sandbox phases, seconds summed over evaluations%s" % (" (" + label + ")" if label else ""))
    print(head)
    total = {"evals": 0, "sandbox": 0.0, "waits": 0, "passes": 0, **{p: 0.0 for p in PHASES}}
    for tier in sorted(rows):
        r = rows[tier]
        for k in total:
            total[k] += r[k]
        print("%-8s %6d %8.1f" % (NAMES.get(tier, str(tier)), r["evals"], r["sandbox"]) +
              "".join(" %8.1f" % r[p] for p in PHASES) + " %7d %6d" % (r["passes"], r["waits"]))
    print("%-8s %6d %8.1f" % ("all", total["evals"], total["sandbox"]) +
          "".join(" %8.1f" % total[p] for p in PHASES) +
          " %7d %6d" % (total["passes"], total["waits"]))
    if counts:
        print("# fresh samples per evaluation: " + "; ".join(
            "%s %.2f (%d evaluations, at most %d)" % (NAMES.get(t, str(t)), sum(c) / len(c),
                                                      len(c), max(c))
            for t, c in sorted(counts.items())))


if __name__ == "__main__":
    main()
