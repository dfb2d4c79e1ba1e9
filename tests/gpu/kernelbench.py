"""Helper of tests/gpu/kernelbench.sh (KernelBench levels 1-3 on the H200).

usage:
  kernelbench.py warm  WORKER TASKS_DIR INDEX COUNT DEADLINE OUT.jsonl
      compile the modules of the tasks whose position mod COUNT is INDEX with torch.compile
      (inductor, default mode) on input set 0, filling the inductor cache that
      TORCHINDUCTOR_CACHE_DIR names; stops starting tasks at DEADLINE (unix seconds)
  kernelbench.py time  WORKER TASKS_DIR DEADLINE OUT.jsonl
      one PyTorch worker (WORKER, started as the runner starts its trusted one: a socket pair
      on stdin/stdout, --backend cuda --trusted), per task: "prepare" (every input set drawn on the GPU, the
      reference outputs, checksums), then "torch" (eager and torch.compile timed on the
      candidate's stream, L2 flushed); a worker that dies or stalls is replaced
  kernelbench.py table IMPORT.jsonl TIME.jsonl WARM.jsonl EAGER.json COMPILE.json OUT.json
      the table (task, import ok, run ok, eager ms, compile ms, H100 eager ms, H100 compile ms,
      ratios) and a last JSON line with the counts per level; EAGER.json and COMPILE.json are
      KernelBench's published H100 times (results/timing/H100_Modal/baseline_time_torch*.json:
      {"level1": {"19_ReLU.py": {"mean": ms, "hardware": ...}}}); OUT.json gets every row
  kernelbench.py campaign REPORT.json UTIL.csv OUT.json
      after tests/gpu/kernelbench_campaign.sh: per task the identity seed's and the compile
      seed's status and speedup over torch eager at the full tier (the same run's eager time),
      how many identities fall outside 0.97-1.03, the GPU busy fraction, the report's fast_p;
      OUT.json gets every row
"""
import glob
import re
import importlib.util
import json
import os
import socket
import struct
import subprocess
import sys
import time

TIMING = {"sets": 1, "warmup": 2, "min_samples": 5, "max_samples": 20, "noise": 0.02,
          "max_seconds": 0.3, "flush_l2": True}
PREPARE_TIMEOUT = 120
BACKEND = os.environ.get("KB_L1_BACKEND", "cuda")  # "host" to try this script on a CPU
SETS = 1  # input sets prepared per task in the bulk run (the end-to-end runs use all three)
TORCH_TIMEOUT = 180


def tasks(tasks_dir):
    dirs = [d for d in glob.glob(os.path.join(tasks_dir, "*")) if
            os.path.isfile(os.path.join(d, "task.json"))]
    return sorted(dirs, key=lambda d: order(os.path.basename(d)))


def number(name):
    """The task number in "l1_19_relu" or "19_ReLU.py"."""
    m = re.search(r"(?:^|_)(\d+)_", name)
    return int(m.group(1)) if m else 0


def level_of(name):
    """The level in "l2_19_..." (0 when the id has no level prefix)."""
    m = re.match(r"l(\d)_", name)
    return int(m.group(1)) if m else 0


def order(name):
    return (level_of(name), number(name))


def prepare_request(d, key):
    t = json.load(open(os.path.join(d, "task.json")))
    return {"op": "prepare", "key": key, "oracle": os.path.join(d, "reference.py"),
            "inputs": t["inputs"], "outputs": t["outputs"], "sets": t["input_sets"],
            "atol": t["tolerance"]["atol"], "rtol": t["tolerance"]["rtol"]}


def warm(worker, tasks_dir, index, count, deadline, out):
    spec = importlib.util.spec_from_file_location("kb_sandbox_torch", worker)
    w = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(w)
    w.open_device(BACKEND, 0)
    torch = w.torch
    with open(out, "a") as f:
        for k, d in enumerate(tasks(tasks_dir)):
            if k % count != index:
                continue
            tid = os.path.basename(d)
            if time.time() > deadline:
                f.write(json.dumps({"task": tid, "warm": "skipped (deadline)"}) + "\n")
                continue
            t0 = time.time()
            rec = {"task": tid}
            try:
                req = prepare_request(d, tid)
                req["sets"] = req["sets"][:1]
                task = w.prepare_task(req)
                n_fwd = len(task.inputs) - len(task.params)
                compiled = torch.compile(task.module)
                with torch.no_grad():
                    compiled(*task.set_inputs[0][:n_fwd])
                w.sync()
                rec["warm"] = "ok"
            except Exception as e:  # recorded, the next task goes on
                rec["warm"] = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0][:200]
                                          if str(e).strip() else "")
            rec["compile_s"] = round(time.time() - t0, 2)
            task = compiled = None
            if BACKEND == "cuda":
                torch.cuda.empty_cache()
            f.write(json.dumps(rec) + "\n")
            f.flush()


class Worker:
    def __init__(self, worker):
        self.sock, child = socket.socketpair()
        # --trusted: this worker only prepares and times torch eager and torch.compile (a
        # confined worker may not start inductor's compilers, and refuses "torch")
        self.proc = subprocess.Popen([sys.executable, "-I", worker, "--backend", BACKEND,
                                      "--device", "0", "--parent", str(os.getpid()),
                                      "--trusted"],
                                     stdin=child, stdout=child)
        child.close()
        self.hello = self.call({"op": "hello"}, 120)

    def call(self, msg, timeout):
        self.sock.settimeout(timeout)
        data = json.dumps(msg).encode()
        self.sock.sendall(struct.pack(">I", len(data)) + data)
        head = self.recv(4)
        return json.loads(self.recv(struct.unpack(">I", head)[0]).decode())

    def recv(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise EOFError("the worker ended (exit status %s)" % self.proc.poll())
            buf += chunk
        return buf

    def close(self):
        try:
            self.sock.close()
        finally:
            self.proc.kill()
            self.proc.wait()


def time_all(worker, tasks_dir, deadline, out):
    w = None
    with open(out, "a") as f:
        for d in tasks(tasks_dir):
            tid = os.path.basename(d)
            rec = {"task": tid}
            if time.time() > deadline:
                rec["run"] = "skipped (deadline)"
                f.write(json.dumps(rec) + "\n")
                continue
            try:
                if w is None:
                    w = Worker(worker)
                    rec["device"] = w.hello.get("device")
                t0 = time.time()
                req = prepare_request(d, tid)
                req["sets"] = req["sets"][:SETS]
                r = w.call(req, PREPARE_TIMEOUT)
                rec["prepare_s"] = round(time.time() - t0, 2)
                if not r.get("ok"):
                    rec["run"] = "prepare failed: %s" % r.get("reason")
                else:
                    rec["run"] = "ok"
                    t0 = time.time()
                    r = w.call(dict(TIMING, op="torch", key=tid), TORCH_TIMEOUT)
                    rec["torch_s"] = round(time.time() - t0, 2)
                    for k in ("torch_eager", "torch_compile"):
                        if k in r:
                            rec[k + "_ms"] = r[k]["median_us"] / 1000.0
                            rec[k + "_noise"] = r[k]["noise"]
                            rec[k + "_samples"] = r[k]["samples"]
                    if r.get("torch_note"):
                        rec["note"] = r["torch_note"]
            except (OSError, EOFError, ValueError) as e:
                rec["run"] = rec.get("run", "") + " worker lost: %s: %s" % (type(e).__name__, e)
                if w is not None:
                    w.close()
                w = None
            f.write(json.dumps(rec) + "\n")
            f.flush()
    if w is not None:
        try:
            w.call({"op": "quit"}, 10)
        except (OSError, EOFError, ValueError):
            pass
        w.close()


def load_jsonl(path):
    out = {}
    if os.path.exists(path):
        for line in open(path):
            line = line.strip()
            if line.startswith("{"):
                x = json.loads(line)
                key = x.get("id") or x.get("task") or os.path.basename(x.get("file", ""))
                out[key] = x
    return out


def fmt(x, w=9):
    return ("%*.3f" % (w, x)) if isinstance(x, (int, float)) else ("%*s" % (w, "-"))


def published(base, level, fname):
    x = base.get("level%d" % level, {}).get(fname)
    return (x["mean"], x.get("hardware")) if x else (None, None)


def ratio(a, b):
    return a / b if a and b else None


def median_of(v):
    v = sorted(x for x in v if x is not None)
    return round(v[len(v) // 2], 3) if v else None


def table(imp_path, time_path, warm_path, eager_path, compile_path, out_path):
    imports = [json.loads(x) for x in open(imp_path) if x.startswith("{")]
    timed = load_jsonl(time_path)
    warmed = load_jsonl(warm_path)
    base_e, base_c = json.load(open(eager_path)), json.load(open(compile_path))
    rows = []
    print("%-52s %-6s %-6s %9s %9s %9s %9s %7s %7s %s" % (
        "task", "import", "run", "eager_ms", "comp_ms", "H100_eag", "H100_cmp", "eag/H1", "cmp/H1",
        "note"))
    for x in sorted(imports, key=lambda x: (x["file"].rsplit("/", 2)[-2], number(os.path.basename(x["file"])))):
        fname = os.path.basename(x["file"])
        m = re.search(r"level(\d)", os.path.dirname(x["file"]))
        level = level_of(x.get("id", "")) or (int(m.group(1)) if m else 0)
        tid = x.get("id") or "l%d_%s" % (level, fname[:-3].lower())
        t = timed.get(tid, {})
        he, hwe = published(base_e, level, fname)
        hc, hwc = published(base_c, level, fname)
        row = {"level": level, "n": number(fname), "task": tid, "import_ok": x["ok"],
               "import_error": x.get("error"), "run": t.get("run", "-"),
               "run_ok": t.get("run") == "ok",
               "eager_ms": t.get("torch_eager_ms"), "compile_ms": t.get("torch_compile_ms"),
               "h100_eager_ms": he, "h100_eager_hw": hwe,
               "h100_compile_ms": hc, "h100_compile_hw": hwc,
               "warm": warmed.get(tid, {}).get("warm"),
               "warm_s": warmed.get(tid, {}).get("compile_s"),
               "prepare_s": t.get("prepare_s"), "note": t.get("note")}
        row["ratio_eager"] = ratio(row["eager_ms"], he)
        row["ratio_compile"] = ratio(row["compile_ms"], hc)
        rows.append(row)
        note = row["import_error"] or ("" if row["run_ok"] else row["run"]) or row["note"] or ""
        print("%-52s %-6s %-6s %s %s %s %s %s %s %s" % (
            tid[:52], "ok" if x["ok"] else "FAIL", "ok" if row["run_ok"] else "-",
            fmt(row["eager_ms"]), fmt(row["compile_ms"]), fmt(he), fmt(hc),
            fmt(row["ratio_eager"], 7), fmt(row["ratio_compile"], 7), note[:90]))
    counts = {}
    for level in sorted({r["level"] for r in rows}):
        rs = [r for r in rows if r["level"] == level]
        counts["level%d" % level] = {
            "files": len(rs), "imported": sum(r["import_ok"] for r in rs),
            "run_ok": sum(r["run_ok"] for r in rs),
            "eager_timed": sum(r["eager_ms"] is not None for r in rs),
            "compile_timed": sum(r["compile_ms"] is not None for r in rs),
            "compile_warmed": sum(r["warm"] == "ok" for r in rs),
            "eager_ratio_median": median_of(r["ratio_eager"] for r in rs),
            "compile_ratio_median": median_of(r["ratio_compile"] for r in rs)}
    json.dump({"rows": rows, "counts": counts}, open(out_path, "w"), indent=1)
    print(json.dumps(counts))


def busy(util_path):
    u = []
    for line in open(util_path) if os.path.exists(util_path) else []:
        parts = line.strip().split(",")
        if len(parts) == 2 and parts[1].strip().isdigit():
            u.append(int(parts[1]))
    on = [i for i, v in enumerate(u) if v > 0]
    if not on:
        return None
    mid = u[on[0]:on[-1] + 1]
    return round(sum(mid) / len(mid), 1)


def seed_row(cands, name):
    for c in cands:
        if c.get("name") == name:
            return c
    return {}


def same_run_x(cand):
    """The same-run speedup of `cand`'s latest full-tier evaluation that has one: over the task's
    baseline (an imported task's identity seed, i.e. eager Model) re-timed in the same process,
    interleaved with it (docs/sandbox.md); None when none."""
    for e in reversed(cand.get("evaluations", [])):
        if e.get("status") == "ok" and e.get("same_run_speedup"):
            return e["same_run_speedup"]
    return None


def campaign(report_path, util_path, out_path):
    rep = json.load(open(report_path))
    rows = []
    print("%-52s %-14s %9s %9s %9s %-14s %9s" % ("task", "identity", "eager_ms", "id_x",
                                                 "id_same", "compile", "comp_x"))
    for t in rep["tasks"]:
        ident, comp = seed_row(t["candidates"], "identity"), seed_row(t["candidates"], "compile")
        eager = t.get("torch_eager_us")
        row = {"task": t["task"], "level": t.get("level"), "eager_us": eager,
               "compile_us": t.get("torch_compile_us"),
               "identity_status": ident.get("status"), "identity_tier": ident.get("tier_name"),
               "identity_us": ident.get("median_us"),
               "identity_x": ident.get("speedup_eager"),
               "identity_same_run_x": same_run_x(ident),
               "compile_status": comp.get("status"), "compile_x": comp.get("speedup_eager"),
               "compile_seed_us": comp.get("median_us")}
        rows.append(row)
        print("%-52s %-14s %s %s %s %-14s %s" % (
            t["task"][:52], (row["identity_status"] or "-")[:14], fmt(eager and eager / 1000.0),
            fmt(row["identity_x"]), fmt(row["identity_same_run_x"]),
            (row["compile_status"] or "-")[:14], fmt(row["compile_x"])))
    ids = [r["identity_x"] for r in rows if r["identity_x"]]
    same = [r["identity_same_run_x"] for r in rows if r["identity_same_run_x"]]
    counts = {"tasks": len(rows),
              "identity_ok": sum(r["identity_status"] == "ok" for r in rows),
              "identity_timed": len(ids),
              "identity_outside_0.97_1.03": sum(not 0.97 <= x <= 1.03 for x in ids),
              "identity_median_x": median_of(ids),
              # the identity against its same-run baseline (same process, interleaved)
              "identity_same_run_timed": len(same),
              "identity_same_run_outside_0.97_1.03": sum(not 0.97 <= x <= 1.03 for x in same),
              "identity_same_run_median_x": median_of(same),
              "compile_ok": sum(r["compile_status"] == "ok" for r in rows),
              "compile_median_x": median_of(r["compile_x"] for r in rows),
              "busy_percent": busy(util_path), "state": rep.get("state"),
              "fast_p": rep.get("fast_p")}
    json.dump({"rows": rows, "counts": counts}, open(out_path, "w"), indent=1)
    print(json.dumps(counts))


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    if argv[1] == "warm":
        warm(argv[2], argv[3], int(argv[4]), int(argv[5]), float(argv[6]), argv[7])
    elif argv[1] == "time":
        time_all(argv[2], argv[3], float(argv[4]), argv[5])
    elif argv[1] == "campaign":
        campaign(*argv[2:5])
    elif argv[1] == "table":
        table(*argv[2:8])
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
