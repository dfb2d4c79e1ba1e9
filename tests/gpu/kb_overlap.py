#!/usr/bin/env python3
"""How many builds the runner had in flight while each KernelBench identity was timed, beside
the identity's speedup over eager (issue 14): from the runner's debug log (KB_LOG=debug) and
kernelbench.py's identity table. A build's span is taken from its tier-0 line ("claimed C s
before its evaluation (build B s, compiled)": from C s before that line, B s long), an
evaluation's from its "evaluated in" line, eager's from "torch eager timed in". The columns
are the mean number of builds in flight over the identity's full-tier evaluation and over
eager's timing ("-": not in the log). Standard library only.
usage: kb_overlap.py RUNNER_LOG IDENTITY_JSON"""
import re, json, sys
if len(sys.argv) != 3:
    sys.exit(__doc__)
log, ident = sys.argv[1], sys.argv[2]
def ts(s):
    h, m, x = s.split(":"); return int(h)*3600 + int(m)*60 + float(x)
builds, evals, eager, cand_task, identity = [], {}, {}, {}, {}
for line in open(log, errors="replace"):
    t = line[:12]
    try: T = ts(t)
    except Exception: continue
    m = re.search(r"item ([0-9a-f]{12})[0-9a-f]*:0: claimed ([\d.]+) s before its evaluation \(build ([\d.]+) s, compiled\)", line)
    if m:
        c, b = float(m.group(2)), float(m.group(3)); builds.append((T - c, T - c + b)); continue
    m = re.search(r"item ([0-9a-f]{12})[0-9a-f]*:1: claimed .* evaluated in ([\d.]+) s", line)
    if m:
        evals[m.group(1)] = (T - float(m.group(2)), T); continue
    m = re.search(r"task (\S+): torch eager timed in ([\d.]+) s", line)
    if m:
        eager[m.group(1)] = (T - float(m.group(2)), T); continue
    m = re.search(r"task (\S+): baseline \"identity\" \(([0-9a-f]{12})\)", line)
    if m:
        identity[m.group(1)] = m.group(2)
def busy(w):
    a, b = w; s = 0.0
    for x, y in builds:
        s += max(0.0, min(b, y) - max(a, x))
    return s / max(b - a, 1e-9)   # mean builds in flight over the window
rows = json.load(open(ident))["rows"]
print("%-40s %7s %9s %9s" % ("task", "id_x", "id_builds", "eager_bld"))
for r in rows:
    if r.get("identity_x") is None: continue
    tid = r["task"]; c = identity.get(tid)
    w = evals.get(c); e = eager.get(tid)
    print("%-40s %7.3f %9s %9s" % (tid, r["identity_x"], "%.2f" % busy(w) if w else "-", "%.2f" % busy(e) if e else "-"))
