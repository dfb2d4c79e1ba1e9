#!/usr/bin/python3
"""Checks store files with h5py and h5dump (run with Debian's /usr/bin/python3).

  check_h5.py fixture WRITER            WRITER writes the fixture file into a temp dir; every row,
                                        source text, log, /task and /best is compared exactly
  check_h5.py h5dump WRITER H5DUMP      h5dump exits 0 on the fixture file and prints evaluations
  check_h5.py loop FILE MIN [--swmr]    a file of `store_writer loop`: at least MIN evaluations,
                                        each row equal to the generator's, each key once. With
                                        --swmr the file may have been left by a killed writer
                                        and is opened as a SWMR reader; only committed rows count

The generator mirrors tests/store/fixture.c: keep the two in step.
"""
import math
import os
import shutil
import subprocess
import sys
import tempfile

import h5py

TIER_NAMES = ["compile", "smoke", "screen"]
STATUS_OK, STATUS_WRONG, STATUS_CRASH = "ok", "wrong_output", "crash"


def cand_id(k):
    return "%064x" % k


def gen_candidate(k):
    pad = (k * 37) % 500
    source = "// candidate %d\nint kb_forward(void) { return %d; }\n" % (k, k) + "/" * pad
    return {
        "id": cand_id(k),
        "task": "sum",
        "name": "cand-%d" % k,
        "generator": "seed" if k == 0 else "llm",
        "parent0": cand_id(k - 1) if k > 0 else "",
        "parent1": cand_id(k - 2) if k > 1 else "",
        "knobs": "-DBLOCK=%d" % (32 * (k % 4 + 1)),
        "flags": "-O3",
        "created": 1700000000.0 + k,
        "source": source,
    }


def gen_eval(i):
    tier = i % 3
    status = STATUS_WRONG if i % 7 == 3 else STATUS_OK
    nan = float("nan")
    e = {
        "candidate": cand_id(i // 3),
        "tier": tier,
        "tier_name": TIER_NAMES[tier],
        "attempt": 1,
        "status": status,
        "reason": "reason %d" % i if status != STATUS_OK else "",
        "runner": "host:%d" % (i % 5),
        "device": "cpu",
        "charge_id": "item-%d#1" % i,
        "started": 1700000000.0 + i,
        "finished": 1700000000.0 + i + 0.5,
        "compile_s": 0.25 * (i % 4),
        "compile_cached": i % 2,
        "registers": 32,
        "spills": i % 3 - 1,
        "shared_bytes": 0,
        "sets_checked": tier,
        "max_abs_err": nan if tier == 0 else 1e-6 * i,
        "max_rel_err": nan if tier == 0 else 1e-7 * i,
        "cost_ms": 10 * i,
        "torch_eager_us": 200.0 + i if tier == 2 and status == STATUS_OK else nan,
        "torch_compile_us": 150.0 + i if tier == 2 and status == STATUS_OK and i % 2 else nan,
        "log": "log for %d\nwarning: x\n" % i if tier == 0 and i % 2 == 0 else "",
    }
    if tier == 0:
        e.update(samples=0, warmup=0, median_us=nan, p10_us=nan, p90_us=nan, mean_us=nan,
                 min_us=nan, noise=nan)
    else:
        m = 100.0 + i
        e.update(samples=10 * tier, warmup=2, median_us=m, p10_us=m - 1, p90_us=m + 1,
                 mean_us=m + 0.5, min_us=m - 2, noise=0.01)
    return e


def fail(msg):
    raise AssertionError(msg)


def same(a, b):
    if isinstance(b, float) and math.isnan(b):
        return isinstance(a, float) and math.isnan(a)
    return a == b


def text(v):
    return v.decode("utf-8") if isinstance(v, bytes) else v


def heap(f, name, off, n):
    return f[name][off:off + n].tobytes().decode("utf-8")


def check_row(where, row, want, skip=()):
    for key, value in want.items():
        if key in skip:
            continue
        got = row[key]
        got = text(got) if isinstance(got, bytes) else got.item() if hasattr(got, "item") else got
        if not same(got, value):
            fail("%s: %s is %r, expected %r" % (where, key, got, value))


def check_candidate(f, row_index, row, k):
    want = gen_candidate(k)
    check_row("/candidates[%d]" % row_index, row, want, skip=("source",))
    src = heap(f, "sources/data", int(row["source_offset"]), int(row["source_len"]))
    if src != want["source"]:
        fail("/candidates[%d]: source differs: %r" % (row_index, src[:80]))


def check_eval(f, row_index, row, i):
    want = gen_eval(i)
    check_row("/evaluations[%d]" % row_index, row, want, skip=("log",))
    log = heap(f, "compile_logs/data", int(row["compile_log_offset"]), int(row["compile_log_len"]))
    if log != want["log"]:
        fail("/evaluations[%d]: compile log %r, expected %r" % (row_index, log, want["log"]))


def expect_aggregates(n_evals):
    """best_tier, status, n_evaluations per candidate after evaluations 0..n_evals-1."""
    agg = {}
    for i in range(n_evals):
        e = gen_eval(i)
        k = i // 3
        best, status, n = agg.get(k, (-1, "", 0))
        if e["tier"] > best:
            best, status = e["tier"], e["status"]
        agg[k] = (best, status, n + 1)
    return agg


def expect_torch(n_evals):
    """The /torch attributes after evaluations 0..n_evals-1 (latest, median, count, tier)."""
    want = {"tier": -1}
    for kind in ("eager", "compile"):
        v = [gen_eval(i)["torch_%s_us" % kind] for i in range(n_evals)]
        v = [x for x in v if not math.isnan(x)]
        s = sorted(v)
        med = float("nan") if not s else (s[len(s) // 2] if len(s) % 2 else
                                          (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2)
        want.update({kind + "_us": v[-1] if v else float("nan"), kind + "_median_us": med,
                     kind + "_n": len(v)})
        if v and want["tier"] < 0:
            want["tier"] = 2
    return want


def check_torch(f, n_evals):
    a = f["torch"].attrs
    for key, value in expect_torch(n_evals).items():
        if not same(a[key].item(), value):
            fail("/torch %s is %r, expected %r" % (key, a[key], value))


def check_root(f):
    if text(f.attrs["format"]) != "kernelbrain.h5/3":
        fail("format is %r" % f.attrs["format"])
    if text(f.attrs["campaign"]) != "demo" or text(f.attrs["task"]) != "sum":
        fail("campaign/task are %r/%r" % (f.attrs["campaign"], f.attrs["task"]))
    if not f.attrs["created"] > 1.6e9:
        fail("created is %r" % f.attrs["created"])
    spec = f["task/spec_json"][()].tobytes().decode()
    ref = f["task/reference"][()].tobytes().decode()
    if spec != '{"schema": "kernelbrain.task/1", "id": "sum"}\n':
        fail("/task/spec_json is %r" % spec)
    if ref != "float reference_sum(const float *x, int n);\n":
        fail("/task/reference is %r" % ref)
    for g in ("sources", "compile_logs", "profiles", "best", "torch"):
        if not isinstance(f[g], h5py.Group):
            fail("/%s is not a group" % g)


def check_fixture(writer):
    tmp = tempfile.mkdtemp(prefix="kb-store-py-")
    try:
        path = os.path.join(tmp, "sum.h5")
        subprocess.run([writer, "fixture", path], check=True)
        with h5py.File(path, "r") as f:
            check_root(f)
            c, e = f["candidates"][:], f["evaluations"][:]
            if c.shape != (5,) or e.shape != (13,):
                fail("shapes %r %r, expected (5,) (13,)" % (c.shape, e.shape))
            commit = f.attrs["commit"]
            if (int(commit["candidates"]), int(commit["evaluations"])) != (5, 13):
                fail("commit is %r" % (commit,))
            agg = expect_aggregates(12)
            for k in range(4):
                check_candidate(f, k, c[k], k)
                best, status, n = agg[k]
                check_row("/candidates[%d]" % k, c[k],
                          {"best_tier": best, "status": status, "n_evaluations": n})
            for i in range(12):
                check_eval(f, i, e[i], i)
            # candidate 1000: knobs cut to 254 bytes, before the 2-byte character
            if text(c[4]["knobs"]) != "k" * 254 or text(c[4]["id"]) != cand_id(1000):
                fail("/candidates[4].knobs is %r" % c[4]["knobs"])
            check_row("/candidates[4]", c[4], {"best_tier": 0, "status": STATUS_CRASH,
                                               "n_evaluations": 1})
            if text(e[12]["reason"]) != "a" * 254 or text(e[12]["status"]) != STATUS_CRASH:
                fail("/evaluations[12] reason %r status %r" % (e[12]["reason"], e[12]["status"]))
            if not math.isnan(e[12]["max_abs_err"]) or not math.isnan(e[12]["median_us"]):
                fail("/evaluations[12]: NaN did not round-trip")
            b = f["best"].attrs
            want = {"candidate": cand_id(3), "name": "cand-3", "tier": 2, "median_us": 111.0,
                    "speedup": 1000.0 / 111.0}
            for key, value in want.items():
                got = text(b[key]) if isinstance(b[key], bytes) else b[key].item()
                if not same(got, value):
                    fail("/best %s is %r, expected %r" % (key, got, value))
            check_torch(f, 12)
            if not b["updated"] > 1.6e9:
                fail("/best updated is %r" % b["updated"])
            if f["profiles/kernels"].shape != (0,) or f["llm/requests"].shape != (0,):
                fail("/profiles/kernels or /llm/requests is not empty")
    finally:
        shutil.rmtree(tmp)
    print("fixture: ok")


def check_h5dump(writer, h5dump):
    tmp = tempfile.mkdtemp(prefix="kb-store-dump-")
    try:
        path = os.path.join(tmp, "sum.h5")
        subprocess.run([writer, "fixture", path], check=True)
        out = subprocess.run([h5dump, "-d", "/evaluations", path], capture_output=True, text=True)
        if out.returncode != 0:
            fail("h5dump exited %d: %s" % (out.returncode, out.stderr))
        for needle in ('DATASET "/evaluations"', "SIMPLE { ( 13 ) / ( H5S_UNLIMITED ) }",
                       '"item-11#1"', '"wrong_output"', '"reason 3"', "nan"):
            if needle not in out.stdout:
                fail("h5dump output lacks %r" % needle)
        full = subprocess.run([h5dump, path], capture_output=True, text=True)
        if full.returncode != 0:
            fail("h5dump of the whole file exited %d: %s" % (full.returncode, full.stderr))
    finally:
        shutil.rmtree(tmp)
    print("h5dump: ok")


def check_loop(path, minimum, swmr):
    kw = {"libver": "latest", "swmr": True} if swmr else {}
    with h5py.File(path, "r", **kw) as f:
        check_root(f)
        commit = f.attrs["commit"]
        n_evals, n_cands = int(commit["evaluations"]), int(commit["candidates"])
        if not swmr and (f["evaluations"].shape[0] != n_evals or
                         f["candidates"].shape[0] != n_cands):
            fail("tables hold %d/%d rows, commit says %d/%d" % (
                f["evaluations"].shape[0], f["candidates"].shape[0], n_evals, n_cands))
        if n_evals < minimum:
            fail("%d evaluations committed, %d were reported flushed" % (n_evals, minimum))
        if n_cands != (n_evals + 2) // 3:
            fail("%d candidates for %d evaluations" % (n_cands, n_evals))
        e = f["evaluations"][:n_evals]
        c = f["candidates"][:n_cands]
        keys = set()
        for i in range(n_evals):
            key = (bytes(e[i]["candidate"]), int(e[i]["tier"]), int(e[i]["attempt"]))
            if key in keys:
                fail("evaluation %r stored twice" % (key,))
            keys.add(key)
            check_eval(f, i, e[i], i)
        agg = expect_aggregates(n_evals)
        for k in range(n_cands):
            check_candidate(f, k, c[k], k)
            if not swmr:
                best, status, n = agg[k]
                check_row("/candidates[%d]" % k, c[k],
                          {"best_tier": best, "status": status, "n_evaluations": n})
        if not swmr:
            check_torch(f, n_evals)
        best = text(f["best"].attrs["candidate"])
        if not swmr and best and int(best, 16) >= n_cands:
            fail("/best names candidate %s, not stored" % best)
    print("loop%s: ok, %d evaluations, %d candidates" % (" (swmr)" if swmr else "", n_evals,
                                                          n_cands))


def main(argv):
    try:
        if len(argv) == 3 and argv[1] == "fixture":
            check_fixture(argv[2])
        elif len(argv) == 4 and argv[1] == "h5dump":
            check_h5dump(argv[2], argv[3])
        elif len(argv) in (4, 5) and argv[1] == "loop":
            check_loop(argv[2], int(argv[3]), argv[4:] == ["--swmr"])
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except AssertionError as e:
        print("check_h5.py: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
