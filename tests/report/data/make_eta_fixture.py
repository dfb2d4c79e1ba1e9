"""Reduces the `kb-submit --json watch` snapshots of a finished campaign to what the ETA reads
(tests/report/test_eta.c): per snapshot, ms since the campaign was submitted, per tier ready,
leased, results and mean settled cost, and the GPU ledger; where the snapshots have them (watch
since issue 15's several-runner ETA), per task and tier ready, leased, results and settled GPU
ms, the runners alive and busy and the seconds since each busy runner's latest result (and,
since the per-call cost model, per task and tier the timed part of that cost, the timed samples,
their caps, the baseline's time per call and how the same kernels' time per call moved from
tier to tier, per open item its candidate's time per call and the runner holding it, per busy
runner an id, per tier the ladder's warmup/min_samples/max_samples); the
ladder's planning cost_ms and max_seconds; and when the campaign ended (its summary.json).
Run once on a real campaign (record_eta.sh does the whole recording); the outputs are
tests/report/data/eta_campaign*.json. The first three were recorded as: `kb-launch --local
C.json --runners N &`, then, once <results>/<id>/redis.env exists, `kb-submit --json watch
C.json -i 1 > watch.jsonl` (it exits 0 when the campaign ends), with C.json a host campaign of
three tasks/host tasks, the default ladder (PLAN_MS 0,50,200,1000), budget 600 GPU seconds,
lease_seconds 5.
Usage: make_eta_fixture.py WATCH_JSONL SUMMARY_JSON [PLAN_MS,...] > eta_campaign.json
(PLAN_MS: only for snapshots whose tiers do not carry cost_ms.)"""
import json
import sys

watch, summary = sys.argv[1], sys.argv[2]
snaps = [json.loads(l) for l in open(watch) if l.startswith("{")]
tiers = snaps[0]["tiers"]
if len(sys.argv) > 3:
    plan = [float(x) for x in sys.argv[3].split(",")]
else:
    plan = [float(t["cost_ms"]) for t in tiers]
created = snaps[0]["time_ms"] - round(snaps[0]["elapsed_s"] * 1000)
end = round(json.load(open(summary))["finished"] * 1000)
out = {"campaign": snaps[0]["campaign"], "tiers": [t["name"] for t in tiers],
       "plan_ms": plan, "end_ms": end - created, "generating": snaps[0]["generating"],
       "samples": []}
if all("max_seconds" in t for t in tiers):
    out["max_seconds"] = [t["max_seconds"] for t in tiers]
if all("max_samples" in t for t in tiers):
    for f in ("warmup", "min_samples", "max_samples"):
        out[f] = [t[f] for t in tiers]
names = {}  # runner name -> id
for s in snaps:
    if s["state"] != "running":
        continue
    sample = {
        "t_ms": s["time_ms"] - created,
        "ready": [t["ready"] for t in s["tiers"]],
        "leased": [t["leased"] for t in s["tiers"]],
        "evaluated": [t["done"] for t in s["tiers"]],
        "cost_ms": [round(c, 1) for c in s["cost_ms_mean"]],
        "gpu_available": s["gpu_ms"]["available"],
        "gpu_spent": s["gpu_ms"]["spent"]}
    if "overhead_n" in s["tiers"][0]:
        sample["over_ms"] = [round(t["overhead_ms"] or 0, 1) for t in s["tiers"]]
        sample["over_n"] = [t["overhead_n"] for t in s["tiers"]]
    if "busy" in s["runners"]:
        sample["runners"] = s["runners"]["alive"]
        sample["busy_s"] = [round(x, 2) for x in s["runners"]["busy_s"]]
        if "busy_names" in s["runners"]:
            sample["busy_runner"] = [names.setdefault(x, len(names))
                                     for x in s["runners"]["busy_names"]]
    if all(t.get("ready") is not None for t in s["tasks"]):
        sample["tasks"] = [{"ready": t["ready"], "leased": t["leased"], "evaluated": t["done"],
                            "settled_ms": [round(x) for x in t["settled_ms"]]}
                           for t in s["tasks"]]
        for c, t in zip(sample["tasks"], s["tasks"]):
            if "timed_ms" in t:
                c["timed_ms"] = [round(x, 1) for x in t["timed_ms"]]
                c["samples"] = t["samples"]
                c["cap_samples"] = [round(x, 1) for x in t["cap_samples"]]
                c["baseline_us"] = [round(x or 0, 1) for x in t["baseline_us"]]
            if "pair_us" in t:
                c["pair_us"] = [round(x, 1) for x in t["pair_us"]]
                c["pair_from_us"] = [round(x, 1) for x in t["pair_from_us"]]
            if "first_ms" in t:
                c["first_ms"] = [round(x) for x in t["first_ms"]]
        if s.get("open_items") is not None:
            index = {t["task"]: i for i, t in enumerate(s["tasks"])}
            sample["items"] = [[index[it["task"]], it["tier"], int(it["leased"]),
                                round(it["basis_ms"] or 0), it["basis_tier"]
                                if it["basis_tier"] is not None else -1]
                               + ([round(it["basis_us"] or 0, 1)] if "basis_us" in it else [])
                               + ([names.setdefault(it["runner"], len(names))
                                   if it["runner"] is not None else -1]
                                  if "runner" in it else [])
                               for it in s["open_items"]]
    out["samples"].append(sample)
json.dump(out, sys.stdout, separators=(",", ":"))
print()
