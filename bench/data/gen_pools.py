#!/usr/bin/python3
"""Writes the synthetic candidate pools of kb-bench-ladder (format: bench/data/README.md).

usage: gen_pools.py [OUT_DIR]   (default: the folder of this script)

Every pool is one task with a baseline of 1000 us and N candidates; a candidate's true time is
the baseline's over its true speedup. Noise columns are the relative standard error of one
measured median at tiers 1..3 of the default ladder (smoke, screen, full). Failures are caught
at the tier that can see them: compile errors and rejected imports at compile (0), most wrong
outputs, crashes and timeouts at smoke (1), wrong outputs that need every input set at
screen (2). The shapes:

  mostly-losers  55% fail; the rest are mostly slower than the baseline, a few are faster
  heavy-tail     25% fail; speedups with a heavy right tail (a handful of 3x-8x kernels)
  near-ties      20% fail; 60% of the candidates sit within 2% of 1.5x, the rest at most 1.4x
  small          60 candidates of the heavy-tail shape, for the ctest

The generator is deterministic (fixed seeds): rerunning it rewrites the same files.
"""
import math
import os
import random
import sys

BASE_US = 1000.0
HEADER = ("# kernelbrain ladder pool, format 1 (bench/data/README.md); written by gen_pools.py\n"
          "task,candidate,baseline,true_us,noise_1,noise_2,noise_3,failure,fail_tier\n")


def noise(rng):
    return (rng.uniform(0.08, 0.25), rng.uniform(0.02, 0.05), rng.uniform(0.004, 0.01))


def failure(rng, p_fail, mix):
    if rng.random() >= p_fail:
        return "ok", -1
    r = rng.random() * sum(w for _, _, w in mix)
    for kind, tier, w in mix:
        r -= w
        if r <= 0:
            return kind, tier
    return mix[-1][0], mix[-1][1]


MIX = [("compile_error", 0, 20), ("rejected", 0, 5), ("wrong_output", 1, 15),
       ("wrong_output", 2, 5), ("crash", 1, 7), ("timeout", 1, 3)]


def speedup_losers(rng):
    return math.exp(rng.gauss(math.log(0.6), 0.35))


def speedup_heavy(rng):
    # Student-t with 2 degrees of freedom on the log scale: a heavy right tail, capped at 8x
    t = rng.gauss(0, 1) / math.sqrt((rng.gauss(0, 1) ** 2 + rng.gauss(0, 1) ** 2) / 2)
    return min(8.0, math.exp(math.log(0.9) + 0.3 * t))


def speedup_ties(rng):
    if rng.random() < 0.6:
        return rng.uniform(1.47, 1.53)
    return min(1.4, math.exp(rng.gauss(math.log(0.9), 0.25)))


def write_pool(path, task, n, seed, p_fail, speedup):
    rng = random.Random(seed)
    with open(path, "w") as f:
        f.write(HEADER)
        n1, n2, n3 = noise(rng)
        f.write(f"{task},baseline,1,{BASE_US:.3f},{n1:.4f},{n2:.4f},{n3:.4f},ok,-1\n")
        for i in range(n):
            kind, tier = failure(rng, p_fail, MIX)
            s = speedup(rng)
            n1, n2, n3 = noise(rng)
            f.write(f"{task},c{i:04d},0,{BASE_US / s:.3f},{n1:.4f},{n2:.4f},{n3:.4f},"
                    f"{kind},{tier}\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    write_pool(os.path.join(out, "mostly-losers.csv"), "losers", 400, 11, 0.55, speedup_losers)
    write_pool(os.path.join(out, "heavy-tail.csv"), "heavy", 400, 12, 0.25, speedup_heavy)
    write_pool(os.path.join(out, "near-ties.csv"), "ties", 400, 13, 0.20, speedup_ties)
    write_pool(os.path.join(out, "small.csv"), "small", 60, 14, 0.25, speedup_heavy)


if __name__ == "__main__":
    main()
