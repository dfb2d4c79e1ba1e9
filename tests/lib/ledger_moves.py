#!/usr/bin/python3
"""Every move of a ledger audit stream, one ledger-entry object per line.

usage: redis-cli --raw XRANGE kb:{cid}:ledger:log - + | ledger_moves.py > ledger.jsonl

Reads the raw XRANGE output on stdin (each stream entry: its id, then field and value lines)
and writes, in order, every move as a ledger-entry object (schemas/ledger-entry.schema.json):
an "entry" field as it is, and a "moves" field (schemas/ledger-moves.schema.json: a runner's
cycle, its moves with the balances after the last) expanded into its moves, each with the
balances right after it (derived backward from the entry's), a settle as its post, overrun
and void, as the per-move entries that complete_claim wrote before the "moves" form. So
readers of the audit trail (tests/e2e/ledger.sh, tests/slurm/preempt.sh, ...) read old and new
campaigns alike. Exits 1, naming the stream entry, on bad JSON or a move it does not know.
"""
import json
import sys


def expand(doc):
    """The per-move ledger-entry objects of one "moves" document, in order."""
    flat = []  # (op, charge, amount, d_available, d_held, d_spent)
    for m in doc["moves"]:
        if m[0] == "reserve":
            a = m[2]
            flat.append(("reserve", m[1], a, -a, a, 0))
        elif m[0] == "settle":
            r, x = m[2], m[3]
            posted = min(r, x)
            if posted > 0:
                flat.append(("post", m[1], posted, 0, -posted, posted))
            if x > r:
                flat.append(("overrun", m[1], x - r, -(x - r), 0, x - r))
            if r > x:
                flat.append(("void", m[1], r - x, r - x, -(r - x), 0))
        else:
            raise ValueError('unknown move "%s"' % m[0])
    bal = [doc["available"], doc["held"], doc["spent"]]
    out = []
    for op, charge, amount, da, dh, ds in reversed(flat):
        out.append({"schema": "kernelbrain.ledger/1", "ts_ms": doc["ts_ms"], "op": op,
                    "currency": doc["currency"], "amount": amount, "charge_id": charge,
                    "who": doc["who"], "available": bal[0], "held": bal[1], "spent": bal[2],
                    "total": doc["total"]})
        bal = [bal[0] - da, bal[1] - dh, bal[2] - ds]
    out.reverse()
    return out


def main():
    lines = sys.stdin.read().split("\n")
    eid = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line in ("entry", "moves") and i + 1 < len(lines):
            try:
                doc = json.loads(lines[i + 1])
                rows = [doc] if line == "entry" else expand(doc)
            except (ValueError, KeyError, IndexError, TypeError) as e:
                print("ledger_moves.py: stream entry %s: %s" % (eid, e), file=sys.stderr)
                sys.exit(1)
            for row in rows:
                print(json.dumps(row, separators=(",", ":")))
            i += 2
            continue
        if line:
            eid = line
        i += 1


if __name__ == "__main__":
    main()
