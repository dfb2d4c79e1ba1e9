#!/usr/bin/env python3
"""Where a KernelBench identity's distance from 1.00x eager comes from (issue 14): from the
campaign's HDF5 files (results/<campaign>/*.h5, e.g. unpacked from kernelbench_all.sh's
kb-state.tar.gz), for every full-tier evaluation that is ok, three timings of the same module:
the candidate's median in the confined worker, the same-run baseline's median (the identity
seed again, in the same confined worker, timed right after the candidate: `baseline_median_us`)
and torch eager's median (`torch_eager_us`: before f4d411f timed by the trusted worker, another
process, just after; since then in the candidate's own process, interleaved with it, so that
`cross` below compares within one process too). Prints per evaluation: same_run = baseline /
candidate (same process: after it before 1095a23, interleaved since), cross = eager / candidate
(the eager timed with that evaluation), and for the identity seed (its candidate id named
by --identity-ids FILE, or every evaluation whose same-run baseline is itself) a summary: how
many fall outside 0.97-1.03 each way. Needs h5py (Debian's /usr/bin/python3).
usage: kb_identity_split.py RESULTS_DIR"""
import glob
import os
import sys

import h5py


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rows = []
    for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.h5"))):
        with h5py.File(path, "r", swmr=True) as f:
            names = dict((text(c["id"]), text(c["name"]) if "name" in c.dtype.names else "")
                         for c in f["candidates"][:])
            for e in f["evaluations"][:]:
                if e["tier"] < 1 or text(e["status"]) != "ok" or not e["median_us"] > 0:
                    continue
                cand = text(e["candidate"])
                rows.append((os.path.basename(path)[:-3], names.get(cand, cand[:8]),
                             float(e["median_us"]), float(e["baseline_median_us"]),
                             float(e["torch_eager_us"])))
    print("%-40s %-9s %11s %11s %11s %8s %8s" % ("task", "candidate", "median_us", "same_run_us",
                                                 "eager_us", "same_run", "cross"))
    out = {"same_run": [0, 0], "cross": [0, 0]}
    n = 0
    for task, name, med, base, eager in rows:
        sr = base / med if base > 0 else float("nan")
        cx = eager / med if eager > 0 else float("nan")
        print("%-40s %-9s %11.1f %11.1f %11.1f %8.3f %8.3f" % (task[:40], name[:9], med, base,
                                                              eager, sr, cx))
        if name != "identity":
            continue
        n += 1
        for k, x in (("same_run", sr), ("cross", cx)):
            if x == x and not 0.97 <= x <= 1.03:
                out[k][0 if x < 0.97 else 1] += 1
    print("identity evaluations: %d; outside 0.97-1.03: against its same-run baseline %d below, "
          "%d above; against its own eager (the trusted worker's before f4d411f, its own "
          "process's, interleaved, since) %d below, %d above"
          % (n, out["same_run"][0], out["same_run"][1], out["cross"][0], out["cross"][1]))


if __name__ == "__main__":
    main()
