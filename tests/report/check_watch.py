"""Checks the captured output of `kb-submit watch`: plain lines (not a terminal), JSON Lines
(--json) and a pseudo-terminal screen (NO_COLOR). Usage: check_watch.py LINES JSONL TTY CID"""
import json
import re
import sys

lines_path, jsonl_path, tty_path, cid = sys.argv[1:5]


def fail(msg):
    sys.exit(f"FAIL: {msg}")


lines = open(lines_path, encoding="utf-8").read().splitlines()
if not lines:
    fail("watch printed no lines")
line_re = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ " + re.escape(cid) +
    r" (submitting|running|draining|done|cancelled) items \d+/\d+ ready [\d/]+ leased [\d/]+"
    r" done [\d/]+ gpu_ms \d+/\d+ held \d+ .*runners \d+.* eta \S+$")
for l in lines:
    if "\033" in l:
        fail(f"escape sequence in a plain line: {l!r}")
    if not line_re.match(l):
        fail(f"line does not match the format: {l!r}")
if " done items " not in lines[-1]:
    fail(f"last line is not the ended campaign: {lines[-1]!r}")
if not re.search(r" sum=\d+\.\d\dx", lines[-1]) or not re.search(r" matmul=\d+\.\d\dx", lines[-1]):
    fail(f"last line has no best speedups: {lines[-1]!r}")

objs = [json.loads(l) for l in open(jsonl_path, encoding="utf-8") if l.strip()]
if not objs:
    fail("watch --json printed nothing")
for o in objs:
    for key in ("campaign", "state", "open", "done", "dead", "leased", "ready", "tiers",
                "gpu_ms", "llm_tokens", "runners", "tasks", "eta_s", "ended"):
        if key not in o:
            fail(f"watch --json object without {key!r}: {o}")
    g = o["gpu_ms"]
    if g["available"] + g["held"] + g["spent"] != g["total"]:
        fail(f"ledger does not add up: {g}")
    if [t["name"] for t in o["tiers"]] != ["compile", "smoke", "screen", "full"]:
        fail(f"tiers: {o['tiers']}")
    # what the ETA with several runners reads (docs/report.md, "The ETA"): the per-task counts
    # add up to the per-tier ones (leases and results exactly; ready items are read a moment
    # after the status script counted them), one open item per ready or leased item
    # (busy counts live leases, known the runners' registrations: a runner's first lease can be
    # seen before its heartbeat registers it, so busy may exceed known for a moment)
    r = o["runners"]
    if not (0 <= r["busy"] and 0 <= r["known"] and len(r["busy_s"]) == r["busy"]):
        fail(f"runners: {r}")
    for key, tier_key in (("leased", "leased"), ("done", "done")):
        per_task = [sum(t[key][k] for t in o["tasks"]) for k in range(len(o["tiers"]))]
        if per_task != [t[tier_key] for t in o["tiers"]]:
            fail(f"tasks' {key} {per_task} do not add up to the tiers' {o['tiers']}")
    if o["open_items"] is not None:
        n_open = sum(sum(t["ready"]) + sum(t["leased"]) for t in o["tasks"])
        if len(o["open_items"]) != n_open:
            fail(f"{len(o['open_items'])} open items for {n_open} ready and leased: {o}")
    if not all("max_seconds" in t and "cost_ms" in t and "overhead_n" in t for t in o["tiers"]):
        fail(f"tiers without the ladder's cost_ms, max_seconds or overhead: {o['tiers']}")
last = objs[-1]
if last["state"] != "done" or last["ended"] is not True:
    fail(f"last JSON object is not the ended campaign: {last}")
if sum(t["done"] for t in last["tiers"]) != last["done"]:
    fail(f"results per tier {last['tiers']} do not add up to {last['done']} items done")
for t in last["tasks"]:
    if not (isinstance(t["best_speedup"], float) and t["best_speedup"] > 0):
        fail(f"task without a best speedup: {t}")
    # sum has a torch_reference (report.sh): torch eager timed at the full tier, no torch.compile
    # in the CPU's torch; matmul has none
    torch_task = t["task"] == "sum"
    if torch_task != (isinstance(t["torch_eager_us"], float) and t["torch_eager_us"] > 0) or \
            torch_task != (isinstance(t["best_speedup_eager"], float) and
                           t["best_speedup_eager"] > 0) or \
            t["torch_compile_us"] is not None or t["best_speedup_compile"] is not None:
        fail(f"torch numbers of {t['task']}: {t}")
if not re.search(r" sum=[0-9.]+x@[^/ ]+/eager=[0-9.]+x ", lines[-1]):
    fail(f"the last plain line lacks sum's speedup over torch eager: {lines[-1]}")

tty = open(tty_path, encoding="utf-8", errors="replace").read()
if not re.search(r"\033\[\d+A", tty) or "\033[2K" not in tty:
    fail("the terminal screen was not redrawn in place (no cursor-up / erase-line sequences)")
if re.search(r"\033\[[0-9;]*m", tty):
    fail("colour sequences on the terminal although NO_COLOR is set")
if f"campaign {cid}: done" not in tty:
    fail("the terminal screen never showed the campaign done")
for word in ("items", "gpu s", "llm tok", "runners", "tier", "ready", "leased", "best speedup",
             "vs eager"):
    if word not in tty:
        fail(f"the terminal screen lacks {word!r}")
print(f"watch: {len(lines)} lines, {len(objs)} JSON objects, terminal screen ok")
