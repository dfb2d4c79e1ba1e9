#!/usr/bin/python3
"""tools/kbresults.py on the real results folder report.sh made, against the C reader's view of
it (kb-submit report --format json) and the export with --tier full.

usage: check_loader.py RESULTS_DIR REPORT.json EXPORT_FULL.jsonl TOOLS_DIR
Checks: every candidate and evaluation of the report is a row, with the same source, status,
tier name and median (NaN where the report has null); strings are str, not bytes; the integer
unknowns (-1 in the files) are NaN; compile logs resolved; the export --tier full has one line
per candidate with a full-tier evaluation, each from that tier.
"""
import json
import math
import sys

folder, report_path, export_path, tools = sys.argv[1:5]
sys.path.insert(0, tools)
import kbresults  # noqa: E402

r = kbresults.load(folder)
rep = json.load(open(report_path))
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)


cands = {row["id"]: row for row in r.candidates.rows()}
evals = list(r.evaluations.rows())
n_rep_c = sum(len(t["candidates"]) for t in rep["tasks"])
n_rep_e = sum(len(c["evaluations"]) for t in rep["tasks"] for c in t["candidates"])
check(len(cands) == n_rep_c, "candidates: loader %d, report %d" % (len(cands), n_rep_c))
check(len(evals) == n_rep_e, "evaluations: loader %d, report %d" % (len(evals), n_rep_e))
for t in rep["tasks"]:
    for c in t["candidates"]:
        row = cands.get(c["candidate"])
        if row is None:
            fails.append("candidate %s missing" % c["candidate"])
            continue
        check(row["source"] == c["source"], "%s: source differs" % c["name"])
        check(row["task"] == t["task"] and row["name"] == c["name"], "%s: task/name" % c["name"])
        best = row["best_tier"]
        check((c["best_tier"] < 0 and math.isnan(best)) or best == c["best_tier"],
              "%s: best_tier %r vs %r" % (c["name"], best, c["best_tier"]))
        mine = {(e["tier"], e["attempt"]): e for e in evals if e["candidate"] == c["candidate"]}
        for e in c["evaluations"]:
            m = mine.get((e["tier"], e["attempt"]))
            if m is None:
                fails.append("%s: evaluation %s missing" % (c["name"], e["tier_name"]))
                continue
            check(m["status"] == e["status"] and m["tier_name"] == e["tier_name"],
                  "%s: status/tier" % c["name"])
            med = m["median_us"]
            check((e["median_us"] is None and math.isnan(med)) or
                  (e["median_us"] is not None and abs(med - e["median_us"]) <= 1e-9 * abs(med)),
                  "%s: median %r vs %r" % (c["name"], med, e["median_us"]))
            check((m["compile_log"] or "") == (e.get("compile_log") or ""),
                  "%s: compile log differs" % c["name"])
            for k in ("registers", "spills", "shared_bytes"):
                v = m[k]
                check(isinstance(v, float) and (e[k] is None and math.isnan(v) or v == e[k]),
                      "%s: %s %r vs %r" % (c["name"], k, v, e[k]))
for name in ("candidates", "evaluations"):
    t = getattr(r, name)
    for col in t.names():
        check(not any(isinstance(v, bytes) for v in t[col]), "%s.%s holds bytes" % (name, col))
check("source_offset" not in r.candidates and "compile_log_offset" not in r.evaluations,
      "heap offsets left in the tables")
check(r.summary is not None and r.summary["campaign"] == rep["campaign"], "summary.json")

full = {e["candidate"] for e in evals if e["tier_name"] == "full"}
lines = [json.loads(line) for line in open(export_path)]
check({x["KB_Candidate"] for x in lines} == full and len(lines) == len(full),
      "export --tier full: %d lines, %d candidates evaluated at full" % (len(lines), len(full)))
check(all(x["KB_Tier"] == "full" for x in lines), "export --tier full: a line of another tier")
check(all(x["CUDA_Runtime"] is None or x["KB_Timed_Tier"] == "full" for x in lines),
      "export --tier full: a runtime from another tier")

if fails:
    print("check_loader: FAIL\n  " + "\n  ".join(fails[:20]), file=sys.stderr)
    sys.exit(1)
print("check_loader: %d candidates, %d evaluations, %d exported at full" %
      (len(cands), len(evals), len(lines)), file=sys.stderr)
