#!/usr/bin/python3
"""Runs kb-bench-ladder on a small pool and checks its output.

usage: check_bench_ladder.py KB_BENCH_LADDER POOL.csv

Checks: exit 0; the last line is JSON with exactly gpu_s_ratio, top5_survival and
false_prune_rate; each is a finite number in its range; the ladder saved GPU time on this pool
(ratio > 1: the small pool is heavy-tailed, where screening must pay off); the table has a row
per seed; one anytime-curve CSV per seed with both methods, GPU seconds increasing and the best
true time never increasing; a pool with a malformed row is refused with its line number;
--first-seed and --explain (a breakdown per run) and the pools: line.
"""
import csv
import json
import math
import os
import subprocess
import sys
import tempfile


def fail(msg):
    print(f"check_bench_ladder: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    bench, pool = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        curves = os.path.join(tmp, "curves")
        p = subprocess.run([bench, "--seeds", "3", "--csv", curves, pool],
                           capture_output=True, text=True, timeout=15)
        if p.returncode != 0:
            fail(f"exit {p.returncode}: {p.stderr}")
        lines = p.stdout.strip().splitlines()
        out = json.loads(lines[-1])
        if sorted(out) != ["false_prune_rate", "gpu_s_ratio", "top5_survival"]:
            fail(f"JSON fields: {sorted(out)}")
        for k, v in out.items():
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                fail(f"{k} = {v!r} is not a finite number")
        if not 1.0 < out["gpu_s_ratio"] < 100:
            fail(f"gpu_s_ratio {out['gpu_s_ratio']}: the ladder saved nothing on a heavy tail")
        for k in ("top5_survival", "false_prune_rate"):
            if not 0 <= out[k] <= 1:
                fail(f"{k} {out[k]} outside [0, 1]")
        rows = [l for l in lines if l.split()[:1] == ["small"] and l.split()[2].isdigit()]
        if len(rows) != 3:
            fail(f"{len(rows)} table rows for 3 seeds:\n{p.stdout}")
        for seed in (1, 2, 3):
            path = os.path.join(curves, f"small-small-seed{seed}.csv")
            with open(path) as f:
                pts = list(csv.DictReader(f))
            for method in ("flat", "ladder"):
                series = [r for r in pts if r["method"] == method]
                if len(series) < 2:
                    fail(f"{path}: {len(series)} points for {method}")
                for a, b in zip(series, series[1:]):
                    if float(b["gpu_s"]) < float(a["gpu_s"]):
                        fail(f"{path}: {method} GPU seconds go back")
                    if float(b["best_true_us"]) > float(a["best_true_us"]):
                        fail(f"{path}: {method} best got worse")
        bad = os.path.join(tmp, "bad.csv")
        with open(pool) as f, open(bad, "w") as g:
            text = f.read().splitlines()
            g.write("\n".join(text[:4] + ["small,x,0,-1,0.1,0.1,0.1,ok,-1"] + text[4:]) + "\n")
        p = subprocess.run([bench, bad], capture_output=True, text=True, timeout=15)
        if p.returncode != 1 or "bad.csv:5:" not in p.stderr:
            fail(f"malformed pool: exit {p.returncode}, stderr {p.stderr!r}")
        # --explain: per run, both methods' GPU seconds by tier; --first-seed: the seeds named
        p = subprocess.run([bench, "--first-seed", "4", "--seeds", "2", "--explain", pool],
                           capture_output=True, text=True, timeout=15)
        lines = p.stdout.splitlines()
        if p.returncode != 0 or f"pools: {pool}" not in lines:
            fail(f"--explain: exit {p.returncode}, no 'pools: {pool}' line:\n{p.stdout}")
        seeds = [l.split()[2] for l in lines if l.split()[:1] == ["small"] and l.split()[2].isdigit()]
        if seeds != ["4", "5"]:
            fail(f"--first-seed 4 --seeds 2 gave seeds {seeds}")
        for what in ("flat   t95:", "ladder t95:", "ladder promotions"):
            if sum(what in l for l in lines) != 2:
                fail(f"--explain: want 2 lines with {what!r}:\n{p.stdout}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
