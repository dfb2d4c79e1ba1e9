#!/usr/bin/env python3
"""The KernelBench tasks the committed GPU campaign results do not cover yet (issue 14), one
id per line, for KB_TASKS (tests/gpu/kernelbench_campaign.sh): every task of TASKS (an import's
--json lines, or the campaign file kb-import-kernelbench --campaign wrote) without both seeds'
verdicts in any bench/results/gpu-tests/h200-*kernelbench*-identity.json or h100-* one (a
verdict and a ratio to eager on one card; the file name says which card); with --outside also
those whose latest identity was timed outside 0.97-1.03 of eager, with --errors also those whose
latest identity or compile seed ended in infra_error or compile_error (to run again after a
fix), with --incomplete also those whose latest compile seed is not ok or either seed was not
timed at the full tier (what tests/gpu/kb_union.py counts as not correct). With --files, the KernelBench files of those tasks instead of their ids (TASKS must then be
an import's --json lines, which name each task's file: KB_FILES of tests/gpu/kernelbench_all.sh
imports only them). Standard library only.
usage: kb_missing.py [--outside] [--errors] [--incomplete] [--files] TASKS"""
import glob
import json
import os
import subprocess
import sys


def task_ids(path):
    """[(id, KernelBench file or None)] of an import's --json lines or a campaign file."""
    text = open(path).read()
    try:
        camp = json.loads(text)
        return [(os.path.basename(os.path.normpath(t)), None) for t in camp["tasks"]]
    except ValueError:
        rows = [json.loads(x) for x in text.splitlines() if x.startswith("{")]
        return [(r["id"], r.get("file")) for r in rows if r.get("ok")]


def age(path):
    """A table's place in time: its date, then its commit's (the file name's hex word) time in
    this repository's history (the names of one day do not sort by time)."""
    name = os.path.basename(path)
    date = name[5:15]
    commit = [w for w in name[:-len(".json")].split("-")
              if len(w) >= 7 and all(c in "0123456789abcdef" for c in w)]
    t = 0
    if commit:
        p = subprocess.run(["git", "-C", os.path.dirname(path), "log", "-1", "--format=%ct",
                            commit[-1]], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True)
        t = int(p.stdout.strip() or 0) if p.returncode == 0 else 0
    return (date, t)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    flags = set(a for a in sys.argv[1:] if a.startswith("--"))
    if len(args) != 1 or flags - {"--outside", "--errors", "--incomplete", "--files"}:
        sys.exit(__doc__)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    latest = {}  # task -> its row in the newest table that has both verdicts
    for f in sorted(glob.glob(os.path.join(root, "bench/results/gpu-tests/"
                                           "h[12]00-*kernelbench*-identity.json")), key=age):
        for r in json.load(open(f))["rows"]:
            if r.get("identity_status") and r.get("compile_status"):
                latest[r["task"]] = r
    bad = ("infra_error", "compile_error")
    for t, path in task_ids(args[0]):
        r = latest.get(t)
        x = r.get("identity_x") if r else None
        if (r is None or ("--outside" in flags and x is not None and not 0.97 <= x <= 1.03) or
                ("--errors" in flags and (r["identity_status"] in bad or
                                          r["compile_status"] in bad)) or
                ("--incomplete" in flags and (r["compile_status"] != "ok" or
                                              not r.get("compile_x") or
                                              not r.get("identity_x")))):
            if "--files" in flags and path is None:
                sys.exit("kb_missing.py: --files needs an import's --json lines, not %s"
                         % args[0])
            print(path if "--files" in flags else t)


if __name__ == "__main__":
    main()
