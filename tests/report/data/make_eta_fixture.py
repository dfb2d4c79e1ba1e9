"""Reduces the `kb-submit --json watch` snapshots of a finished campaign to what the ETA reads
(tests/report/test_eta.c): per snapshot, ms since the campaign was submitted, per tier ready,
leased, results and mean settled cost, and the GPU ledger; and when the campaign ended (its
summary.json). Run once on a real campaign; the outputs are tests/report/data/eta_campaign*.json.
Recorded as: `kb-launch --local C.json --runners N &`, then, once <results>/<id>/redis.env
exists, `kb-submit --json watch C.json -i 1 > watch.jsonl` (it exits 0 when the campaign ends),
with C.json a host campaign of three tasks/host tasks, the default ladder (PLAN_MS
0,50,200,1000), budget 600 GPU seconds, lease_seconds 5.
Usage: make_eta_fixture.py WATCH_JSONL SUMMARY_JSON PLAN_MS,... > eta_campaign.json"""
import json
import sys

watch, summary, plan = sys.argv[1], sys.argv[2], [float(x) for x in sys.argv[3].split(",")]
snaps = [json.loads(l) for l in open(watch) if l.startswith("{")]
created = snaps[0]["time_ms"] - round(snaps[0]["elapsed_s"] * 1000)
end = round(json.load(open(summary))["finished"] * 1000)
out = {"campaign": snaps[0]["campaign"], "tiers": [t["name"] for t in snaps[0]["tiers"]],
       "plan_ms": plan, "end_ms": end - created, "generating": snaps[0]["generating"],
       "samples": []}
for s in snaps:
    if s["state"] != "running":
        continue
    out["samples"].append({
        "t_ms": s["time_ms"] - created,
        "ready": [t["ready"] for t in s["tiers"]],
        "leased": [t["leased"] for t in s["tiers"]],
        "evaluated": [t["done"] for t in s["tiers"]],
        "cost_ms": [round(c, 1) for c in s["cost_ms_mean"]],
        "gpu_available": s["gpu_ms"]["available"],
        "gpu_spent": s["gpu_ms"]["spent"]})
json.dump(out, sys.stdout, separators=(",", ":"))
print()
