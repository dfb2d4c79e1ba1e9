#!/usr/bin/python3
"""After a kill -9 of the scheduler: checks the HDF5 files against what redis acknowledged.

usage: check_writer.py REDIS_SOCKET CAMPAIGN RESULTS_DIR TASK... [--swmr]

For every task file (already recovered by h5_recover, so a plain h5py open works; with --swmr,
as the killed writer left it, opened as a SWMR reader and read up to its committed counts): every
(candidate, tier, attempt) at most once, every evaluation's candidate in /candidates, and every
result the scheduler acknowledged in redis (a results-stream entry at or before the group's
last-delivered id that is not pending) present in its task's file. Entries naming candidates
unknown to redis are skipped, as the scheduler skips them. Prints one JSON line of counts.
Talks RESP to redis over its unix socket with the standard library only.
"""
import json
import os
import socket
import sys

import h5py


def fail(msg):
    print(f"check_writer: {msg}", file=sys.stderr)
    sys.exit(1)


class Redis:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.f = self.s.makefile("rb")

    def cmd(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a.encode() if isinstance(a, str) else a
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.s.sendall(b"".join(out))
        return self.read()

    def read(self):
        line = self.f.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            return data.decode()
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise RuntimeError(f"bad reply {line!r}")


def sid(x):
    a, b = x.split("-")
    return int(a), int(b)


def main():
    args = sys.argv[1:]
    swmr = "--swmr" in args
    args = [a for a in args if a != "--swmr"]
    sock, cid, rdir, tasks = args[0], args[1], args[2], args[3:]
    r = Redis(sock)
    key = "kb:{%s}:results" % cid
    groups = r.cmd("XINFO", "GROUPS", key)
    last = None
    for g in groups:
        d = dict(zip(g[::2], g[1::2]))
        if d["name"] == "scheduler":
            last = d["last-delivered-id"]
    if last is None:
        fail("no scheduler group")
    pending = {p[0] for p in r.cmd("XPENDING", key, "scheduler", "-", "+", "100000")}
    acked = {}
    n_entries = 0
    for eid, fields in r.cmd("XRANGE", key, "-", "+"):
        n_entries += 1
        f = dict(zip(fields[::2], fields[1::2]))
        if sid(eid) > sid(last) or eid in pending or "result" not in f:
            continue
        try:
            res = json.loads(f["result"])
        except ValueError:
            continue
        if not r.cmd("EXISTS", "kb:{%s}:cand:%s" % (cid, res.get("candidate", ""))):
            continue
        acked.setdefault(res["task"], set()).add((res["candidate"], res["tier"], res["attempt"]))
    counts = {}
    for task in tasks:
        path = os.path.join(rdir, f"{task}.h5")
        if not os.path.exists(path):
            if acked.get(task):
                fail(f"{path} missing but {len(acked[task])} results of it were acknowledged")
            continue
        opts = {"libver": "latest", "swmr": True} if swmr else {}
        with h5py.File(path, "r", **opts) as h:
            commit = h.attrs["commit"]
            n_c, n_e = int(commit["candidates"]), int(commit["evaluations"])
            if not swmr and (len(h["candidates"]) != n_c or len(h["evaluations"]) != n_e):
                fail(f"{path}: rows past the commit after recovery")
            cands = {c.decode() for c in h["candidates"]["id"][:n_c]}
            keys = set()
            for e in h["evaluations"][:n_e]:
                k = (e["candidate"].decode(), int(e["tier"]), int(e["attempt"]))
                if k in keys:
                    fail(f"{path}: evaluation {k} stored twice")
                if k[0] not in cands:
                    fail(f"{path}: evaluation of a candidate not in /candidates: {k[0]}")
                keys.add(k)
        missing = acked.get(task, set()) - keys
        if missing:
            fail(f"{path}: {len(missing)} acknowledged result(s) missing, e.g. {sorted(missing)[0]}")
        counts[task] = {"rows": len(keys), "acked": len(acked.get(task, ()))}
    print(json.dumps({"stream": n_entries, "pending": len(pending), "files": counts}))


if __name__ == "__main__":
    main()
