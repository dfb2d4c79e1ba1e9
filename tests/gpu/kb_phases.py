#!/usr/bin/env python3
"""Where a KernelBench campaign's evaluations spent their time, from the runner's debug log
(KB_LOG=debug; tests/gpu/kernelbench_campaign.sh keeps it as runner-0.log): per tier the items,
their seconds evaluating and the task preparations inside them (runner/worker.c "item ...:
evaluated in"), the preparations by worker (runner/evaluator.c "prepared in the trusted|confined
worker"), the trusted worker's torch eager and torch.compile timing ("torch eager and
torch.compile timed", or "times reused"), and the PyTorch worker's phases of each evaluation ("eval: ... s in the
sandbox (load, check, ...", "the same-run baseline's samples" and, since 2026-12-06, "torch
eager's samples in the same process"); the requests count each mode's request (eager's only
where the candidate's process did not time it). Standard library only (the
GPU machine installs nothing).
usage: kb_phases.py RUNNER_LOG"""
import re
import sys

ITEM = re.compile(r"item [0-9a-f]+:(\d+): claimed [\d.]+ s before its evaluation .* evaluated "
                  r"in ([\d.]+) s \(task preparation ([\d.]+) s\)")
PREP = re.compile(r"prepared in the (trusted|confined) worker in ([\d.]+) s")
TORCH = re.compile(r"torch (eager|compile) timed in ([\d.]+) s \(.*\), ([\d.]+) s since the "
                   r"request")
GAVE_UP = re.compile(r"torch (eager|compile) not timed: (.*)")
N = r"([\d.]+|nan)"  # a phase the worker does not have is logged as nan
EVAL = re.compile(r"eval: .*?([\d.]+) s in the sandbox \(load %s, check %s, warm-up %s, "
                  r"samples %s, fresh %s, trace %s, re-check %s, metrics %s\)" % ((N,) * 8))
BASE = re.compile(r"the same-run baseline's samples ([\d.]+) s")
REUSED = re.compile(r"torch (eager and torch.compile|compile) times reused")
EAGER = re.compile(r"torch eager's samples in the same process ([\d.]+) s")
# torch.compile of a task's module compiled ahead on the compile pool (runner/worker.c
# reference_built, since 2026-12-07), or not, with why
AHEAD = re.compile(r"torch.compile of its module compiled ahead(?: \(already.*\))? in ([\d.]+) s")
NOT_AHEAD = re.compile(r"torch.compile of its module not compiled ahead: (.*)")


def num(text):
    try:
        v = float(text)
    except ValueError:
        return 0.0
    return 0.0 if v != v else v  # nan: the phase did not run


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    tiers, preps, torch_t, reused, failed = {}, {}, [0, 0.0, 0.0, 0.0, 0.0], 0, []
    ahead, not_ahead = [0, 0.0], {}
    ev = [0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]  # n, sandbox, load, check, samples,
    for line in open(sys.argv[1], errors="replace"):  # fresh, recheck, baseline, eager
        m = ITEM.search(line)
        if m:
            t = tiers.setdefault(int(m.group(1)), [0, 0.0, 0.0])
            t[0] += 1
            t[1] += float(m.group(2))
            t[2] += float(m.group(3))
            continue
        m = PREP.search(line)
        if m:
            p = preps.setdefault(m.group(1), [0, 0.0])
            p[0] += 1
            p[1] += float(m.group(2))
            continue
        m = TORCH.search(line)
        if m:  # one request per mode (eager only where the candidate's process did not time it)
            torch_t[0] += 1
            torch_t[1] += float(m.group(2))
            torch_t[2 if m.group(1) == "eager" else 3] += float(m.group(2))
            torch_t[4] += float(m.group(3))
            continue
        m = GAVE_UP.search(line)
        if m:
            failed.append("%s: %s" % (m.group(1), m.group(2)[:100]))
            continue
        m = EVAL.search(line)
        if m:
            ev[0] += 1
            ev[1] += float(m.group(1))
            for k, g in zip((2, 3, 4, 5, 6), (2, 3, 5, 6, 8)):
                ev[k] += num(m.group(g))
            continue
        m = BASE.search(line)
        if m:
            ev[7] += float(m.group(1))
            continue
        m = EAGER.search(line)
        if m:
            ev[8] += float(m.group(1))
            continue
        m = AHEAD.search(line)
        if m:
            ahead[0] += 1
            ahead[1] += float(m.group(1))
            continue
        m = NOT_AHEAD.search(line)
        if m:
            why = m.group(1).strip()[:80]
            not_ahead[why] = not_ahead.get(why, 0) + 1
            continue
        if REUSED.search(line):
            reused += 1
    print("# tier  items  evaluating_s  of_which_preparing_s")
    for k in sorted(tiers):
        n, s, p = tiers[k]
        print("%6d %6d %13.1f %21.1f" % (k, n, s, p))
    print("# preparations: " + ", ".join("%s %d in %.1f s" % (w, p[0], p[1])
                                          for w, p in sorted(preps.items())))
    print("# torch eager/compile requests: %d, %.1f s in the trusted worker (eager %.1f, compile "
          "%.1f), %.1f s with its start and preparation; reused %d times" % (tuple(torch_t) +
                                                                            (reused,)))
    print("# torch.compile compiled ahead on the compile pool: %d, %.1f s of pool time; not: %d%s"
          % (ahead[0], ahead[1], sum(not_ahead.values()),
             "".join("\n#   %d x %s" % (n, w) for w, n in sorted(not_ahead.items()))))
    print("# torch timings that failed: %d%s" % (len(failed), "".join("\n#   " + f for f in failed)))
    print("# PyTorch worker evaluations: %d, %.1f s in the sandbox: load %.1f, check %.1f, "
          "samples %.1f, fresh %.1f, re-check %.1f, same-run baseline %.1f, torch eager %.1f"
          % tuple(ev))


if __name__ == "__main__":
    main()
