#!/usr/bin/python3
"""After a kill -9 of the scheduler: checks the HDF5 files against what redis acknowledged.

usage: check_writer.py REDIS_SOCKET CAMPAIGN RESULTS_DIR TASK... [--swmr] [--profiles]
                       [--llm-complete]

For every task file (already recovered by h5_recover, so a plain h5py open works; with --swmr,
as the killed writer left it, opened as a SWMR reader and read up to its committed counts): every
(candidate, tier, attempt) at most once, every evaluation's candidate in /candidates, and every
result the scheduler acknowledged in redis (a results-stream entry at or before the group's
last-delivered id that is not pending) present in its task's file. Entries naming candidates
unknown to redis are skipped, as the scheduler skips them.
Format 2 tables too: every /profiles/kernels row belongs to exactly one evaluation's
[kernel_offset, kernel_offset + kernel_count) range, with that evaluation's (candidate, tier,
attempt), and the ranges cover the committed rows without gaps (no duplicate or orphan kernel
rows); /llm/requests holds each request id once, and every entry of the task's LLM audit stream
kb:{cid}:llm:<task> up to the last one in the file (all of them, with --llm-complete), with the
prompt and response that redis keeps zstd-compressed (decompressed by the zstd tool). With
--profiles, the results posted by tests/e2e/profile_runner.c carry exactly the metrics, trace
summary, same-run speedup and kernel records that program derives. Prints one JSON line of
counts.
Talks RESP to redis over its unix socket with the standard library only.
"""
import json
import os
import socket
import subprocess
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
            try:
                return data.decode()
            except UnicodeDecodeError:
                return data  # binary: the zstd-compressed texts of the llm audit
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise RuntimeError(f"bad reply {line!r}")


def sid(x):
    a, b = x.split("-")
    return int(a), int(b)


def unzstd(data):
    if isinstance(data, str):
        data = data.encode()
    if not data:
        return b""
    return subprocess.run(["zstd", "-dc"], input=data, capture_output=True, check=True).stdout


def profile_expect(cand, tier):
    """What tests/e2e/profile_runner.c posts for (candidate, tier)."""
    h = int(cand[0], 16)
    n = 1 + h % 4
    kernels = [{"name": "_Z4kernILi%dEEvPf" % k, "grid_x": k + 1, "grid_y": 2, "grid_z": 1,
                "block_x": 128, "block_y": 1, "block_z": 1, "registers": 32 + k,
                "static_smem": 1024 * k, "dynamic_smem": 16 * tier, "start_ns": 1000 * (k + 1),
                "end_ns": 1000 * (k + 1) + 500 + tier, "stream": 7, "correlation": 100 + k}
               for k in range(n)]
    cols = {"median_us": 50 + tier, "baseline_median_us": 100.0,
            "same_run_speedup": 100.0 / (50 + tier), "kernel_us": 5.5, "dram_pct": 10 + tier,
            "sm_pct": 20 + tier, "occupancy_pct": 30, "l2_hit_pct": 40, "trace_kernels": n + 2,
            "trace_own_kernels": n, "trace_own_ns": 1000 * n, "trace_other_ns": 0,
            "trace_late_ns": 0, "trace_dropped": 0, "kernels_dropped": h % 2, "kernel_count": n}
    return cols, kernels


def value(x):
    return x.decode() if isinstance(x, bytes) else x.item() if hasattr(x, "item") else x


def check_profiles(path, h, evals, n_k, expect):
    """Kernel rows of the committed evaluations `evals`: one owner each, no gap; with `expect`,
    the values profile_runner posts. Returns the number of kernel rows."""
    kern = h["profiles/kernels"][:n_k]
    owner = [None] * n_k
    for e in evals:
        key = (e["candidate"].decode(), int(e["tier"]), int(e["attempt"]))
        off, cnt = int(e["kernel_offset"]), int(e["kernel_count"])
        if off < 0 or cnt < 0 or off + cnt > n_k:
            fail(f"{path}: evaluation {key} names kernel rows {off}+{cnt} of {n_k}")
        for i in range(off, off + cnt):
            if owner[i] is not None:
                fail(f"{path}: kernel row {i} claimed by {owner[i]} and {key}")
            owner[i] = key
            row = (kern[i]["candidate"].decode(), int(kern[i]["tier"]), int(kern[i]["attempt"]))
            if row != key:
                fail(f"{path}: kernel row {i} is {row}, its evaluation {key}")
        if expect and e["runner"].decode() == "profile-runner":
            cols, kernels = profile_expect(key[0], key[1])
            for c, want in cols.items():
                if abs(float(e[c]) - want) > 1e-9 * max(1.0, abs(want)):
                    fail(f"{path}: evaluation {key} {c} = {e[c]!r}, posted {want!r}")
            for k, want in enumerate(kernels):
                got = {m: value(kern[off + k][m]) for m in want}
                if got != want:
                    fail(f"{path}: evaluation {key} kernel {k} is {got}, posted {want}")
    if None in owner:
        fail(f"{path}: kernel row {owner.index(None)} belongs to no evaluation")
    return n_k


def check_llm(path, h, n_l, r, cid, task, complete):
    """/llm/requests against the task's audit stream. Returns the number of rows."""
    rows = h["llm/requests"][:n_l]
    ids = [x.decode() for x in rows["request"]]
    if len(set(ids)) != len(ids):
        fail(f"{path}: an llm request stored twice")
    by_id = {i: row for i, row in zip(ids, rows)}
    stream = r.cmd("XRANGE", "kb:{%s}:llm:%s" % (cid, task), "-", "+")
    last = rows[-1]["entry"].decode() if n_l else None
    for eid, fields in stream:
        if not complete and (last is None or sid(eid) > sid(last)):
            continue
        f = dict(zip(fields[::2], fields[1::2]))
        row = by_id.get(f["charge"])
        if row is None:
            fail(f"{path}: llm audit entry {eid} ({f['charge']}) missing from /llm/requests")
        text = h["llm/text"]
        for part in ("prompt", "response"):
            off, n = int(row[part + "_offset"]), int(row[part + "_len"])
            got = text[off:off + n].tobytes() if n else b""
            if got != unzstd(f.get(part, b"")):
                fail(f"{path}: {f['charge']}: /llm/text {part} differs from redis")
        for col in ("kind", "status", "model"):
            if row[col].decode() != f.get(col, ""):
                fail(f"{path}: {f['charge']}: {col} {row[col]!r}, redis {f.get(col)!r}")
        if int(row["tokens_in"]) != int(f["tokens_in"]) or \
                int(row["tokens_out"]) != int(f["tokens_out"]):
            fail(f"{path}: {f['charge']}: tokens differ from redis")
    return n_l


def main():
    args = sys.argv[1:]
    swmr = "--swmr" in args
    expect = "--profiles" in args
    complete = "--llm-complete" in args
    args = [a for a in args if a not in ("--swmr", "--profiles", "--llm-complete")]
    sock, cid, rdir, tasks = args[0], args[1], args[2], args[3:]
    r = Redis(sock)
    key = "kb:{%s}:results" % cid
    # the scheduler makes its group (reading from 0) when it starts; a kill before that leaves
    # no group, and perhaps no stream yet: then nothing was consumed or acknowledged, and no
    # file may hold an evaluation (checked below)
    groups = r.cmd("XINFO", "GROUPS", key) if r.cmd("EXISTS", key) else []
    last = None
    for g in groups:
        d = dict(zip(g[::2], g[1::2]))
        if d["name"] == "scheduler":
            last = d["last-delivered-id"]
    no_group = last is None
    if no_group:
        last, pending = "0-0", set()
    else:
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
            if no_group and n_e:
                fail(f"{path}: {n_e} evaluations committed, but the scheduler has no group")
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
            n_k = check_profiles(path, h, h["evaluations"][:n_e], int(commit["kernels"]), expect)
            n_l = check_llm(path, h, int(commit["llm"]), r, cid, task, complete)
        missing = acked.get(task, set()) - keys
        if missing:
            fail(f"{path}: {len(missing)} acknowledged result(s) missing, e.g. {sorted(missing)[0]}")
        counts[task] = {"rows": len(keys), "acked": len(acked.get(task, ())), "kernels": n_k,
                        "llm": n_l}
    print(json.dumps({"stream": n_entries, "pending": len(pending), "files": counts}))


if __name__ == "__main__":
    main()
