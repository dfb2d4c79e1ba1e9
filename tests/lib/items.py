#!/usr/bin/python3
"""The items of a campaign, one JSON object per line.

usage: redis-cli --raw HGETALL kb:{cid}:items | items.py > items.jsonl

Reads the raw HGETALL output on stdin (an item id line, then its item line) and writes each item
(layout 2, common/include/kb/item.h: "state|attempt|claims|cost|priority|task|token|runner|
charge|result|next", the candidate and tier from the id) as an object with the fields "id",
"cand", "tier", "state", "attempt", "claims", "cost", "priority", "task", "token", "runner"
(unescaped), "charge", "result", "next" ("" for an empty field). A line that is not an item of
layout 2 is written as {"id": ..., "bad": line}. The shell tests' one reader of items
(tests/lib/common.sh, items_jsonl), as kb_item_parse is the C processes'.
"""
import json
import sys

FIELDS = ("state", "attempt", "claims", "cost", "priority", "task", "token", "runner", "charge",
          "result", "next")


def decode(item_id, line):
    """The item `item_id` from its line, as a dict."""
    parts = line.split("|")
    cand, _, tier = item_id.rpartition(":")
    if len(parts) != len(FIELDS) or not tier.isdigit():
        return {"id": item_id, "bad": line}
    it = dict(zip(FIELDS, parts))
    try:
        for k in ("attempt", "claims", "cost"):
            it[k] = int(it[k])
        it["priority"] = float(it["priority"])
        it["runner"] = json.loads('"' + it["runner"] + '"')
    except ValueError:
        return {"id": item_id, "bad": line}
    it.update(id=item_id, cand=cand, tier=int(tier))
    return it


def main():
    lines = sys.stdin.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for i in range(0, len(lines) - 1, 2):
        print(json.dumps(decode(lines[i], lines[i + 1])))


if __name__ == "__main__":
    main()
