"""Reads a campaign's HDF5 files (h5py) and its ledger, checks the figures a multi-node scenario
promises, and prints them as one JSON object.

usage: figures.py RESULTS_DIR LEDGER_JSON DONE DEAD
LEDGER_JSON: the campaign's kb:{cid}:ledger hash as a JSON object. DONE, DEAD: the campaign's
items done and dead-lettered (kb:{cid}:meta). Fails (exit 1, the reason on stderr) when a
(candidate, tier) has two rows (an item recorded or charged twice), a charge id repeats, the rows
are not DONE + DEAD (an item lost), or the ledger is not exact: available + held + spent ==
total, held == 0 at rest, spent == the sum of cost_ms over the rows.
"""
import collections
import glob
import json
import os
import sys

import h5py


def s(b):
    return b.decode("utf-8") if isinstance(b, bytes) else str(b)


def fail(msg):
    print(f"figures: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    results, ledger_path, done, dead = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rows, cost, retried = 0, 0, 0
    runners = collections.Counter()
    keys, charges = set(), set()
    for path in sorted(glob.glob(os.path.join(results, "*.h5"))):
        with h5py.File(path, "r") as f:
            for e in f["evaluations"][:]:
                key = (s(e["candidate"]), int(e["tier"]))
                if key in keys:
                    fail(f"{path}: candidate {key[0][:12]} tier {key[1]} has two rows")
                keys.add(key)
                if s(e["charge_id"]) in charges:
                    fail(f"{path}: charge {s(e['charge_id'])} recorded twice")
                charges.add(s(e["charge_id"]))
                rows += 1
                cost += int(e["cost_ms"])
                retried += int(e["attempt"]) > 1
                runners[s(e["runner"])] += 1
    if rows != done + dead:
        fail(f"{rows} rows in the HDF5 files, but {done} items done + {dead} dead")
    led = json.load(open(ledger_path))
    total, avail = int(led["gpu_ms:total"]), int(led["gpu_ms:available"])
    held, spent = int(led["gpu_ms:held"]), int(led["gpu_ms:spent"])
    if avail + held + spent != total:
        fail(f"ledger: {avail} + {held} + {spent} != {total}")
    if held != 0:
        fail(f"ledger holds {held} ms at rest")
    if spent != cost:
        fail(f"ledger spent {spent} ms, the rows cost {cost} ms")
    print(json.dumps({"rows": rows, "duplicates": 0, "retried": retried, "spent_ms": spent,
                      "rows_cost_ms": cost, "total_ms": total, "runners": dict(runners)}))


main()
