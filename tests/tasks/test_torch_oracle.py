"""The PyTorch oracle on the CPU (ctest tasks_torch_oracle): KernelBench-format files of
tests/tasks/kernelbench/ imported as host tasks, then host C candidates evaluated through the
runner's evaluator and sandbox client (kb-test-torch-eval) in the PyTorch worker:
  - 1_relu: honest -> ok, copy -> wrong_output, edits its input -> rejected, null write ->
    crash (worker restarted), endless loop -> timeout (watchdog), honest again -> ok; the full
    tier times torch eager in the same process;
  - 2_sum_over_dim, 8_cross_entropy (i64 targets, 0-dim output), 10_max_with_indices (two
    outputs, f32 and i64) with honest candidates -> ok;
  - 12_small_linear: the module's weight and bias passed as inputs -> ok; ignoring the bias ->
    wrong_output;
and the worker's protocol answers (errors naming the field, as kb-sandbox's).

usage: test_torch_oracle.py IMPORTER TOOL CANDIDATES_DIR WORKER
"""
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = os.path.join(HERE, "kernelbench")
failures = []


def check(cond, what):
    print("%s: %s" % ("ok" if cond else "FAIL", what))
    if not cond:
        failures.append(what)


def evaluate(tool, task, cands, tiers, cache):
    cmd = [tool, "--backend", "host", "--cache", cache, "--tiers", tiers, task] + cands
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=240)
    if p.returncode != 0:
        print(p.stderr)
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    for x in lines:
        print("   ", json.dumps(x))
    return p.returncode, lines


def protocol(worker, task_dir):
    a, b = socket.socketpair()
    p = subprocess.Popen([sys.executable, "-I", worker, "--backend", "host"], stdin=b, stdout=b)
    b.close()

    def call(msg, raw=None):
        data = raw if raw is not None else json.dumps(msg).encode()
        a.sendall(struct.pack(">I", len(data)) + data)
        head = a.recv(4, socket.MSG_WAITALL)
        n = struct.unpack(">I", head)[0]
        return json.loads(a.recv(n, socket.MSG_WAITALL).decode())

    try:
        h = call({"op": "hello"})
        check(h["op"] == "hello" and h["backend"] == "host" and h["pid"] == p.pid and
              h["worker"] == "pytorch", "hello names the process and the worker")
        task = json.load(open(os.path.join(task_dir, "task.json")))
        good = {"op": "prepare", "key": "k1", "oracle": os.path.join(task_dir, "reference.py"),
                "inputs": task["inputs"], "outputs": task["outputs"],
                "sets": task["input_sets"], "atol": 1e-4, "rtol": 1e-4}
        bad = dict(good, key="k2", inputs=[{"name": "x", "dtype": "f33", "shape": [16, 16384]}])
        r = call(bad)
        check(r == {"op": "error", "field": "inputs[0].dtype",
                    "reason": '"inputs[0].dtype": unknown dtype "f33"'}, "bad dtype: %s" % r)
        r = call(dict(good, key="k3", sets=[{"seed": 1, "distribution": "cauchy", "low": 0,
                                             "high": 1}]))
        check(r.get("field") == "sets[0].distribution", "bad distribution: %s" % r)
        r = call({"op": "frobnicate"})
        check(r.get("op") == "error" and r.get("field") == "op", "unknown op: %s" % r)
        r = call(None, raw=b"[1, 2")
        check(r.get("op") == "error" and r.get("field") == "", "not JSON: %s" % r)
        r = call({"op": "eval", "key": "nope", "library": "/x.so", "sets": 0, "warmup": 0,
                  "max_samples": 0, "flush_l2": False, "recheck": False})
        check(r.get("field") == "key", "eval of an unknown key: %s" % r)
        r = call(dict(good, outputs=[dict(task["outputs"][0], shape=[16, 1])]))
        check(r.get("op") == "prepare" and r.get("ok") is False and "outputs[0]" in
              r.get("reason", ""), "an output shape the module does not make: %s" % r)
        r = call(good)
        check(r.get("ok") is True and r.get("cached") is False, "prepare: %s" % r)
        r = call(good)
        check(r.get("ok") is True and r.get("cached") is True, "prepare again is cached")
        r = call({"op": "eval", "key": "k1", "library": "/nonexistent.so", "sets": 0,
                  "warmup": 0, "max_samples": 0, "flush_l2": False, "recheck": False})
        check(r.get("status") == "compile_error", "a library that does not load: %s" % r)
        check(call({"op": "quit"}) == {"op": "bye"}, "quit -> bye")
        check(p.wait(timeout=10) == 0, "exit status 0 after quit")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        a.close()


def main(argv):
    importer, tool, cands, worker = argv[1:5]
    tmp = tempfile.mkdtemp(prefix="kb-torch-oracle.")
    try:
        out = os.path.join(tmp, "tasks")
        names = ["1_relu", "2_sum_over_dim", "8_cross_entropy", "10_max_with_indices",
                 "12_small_linear"]
        p = subprocess.run([importer, "--backend", "host", "--out", out] +
                           [os.path.join(FILES, n + ".py") for n in names],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(p.stdout)
        check(p.returncode == 0, "import %s" % ", ".join(names))
        cache = os.path.join(tmp, "cache")
        c = lambda n: os.path.join(cands, n + ".c")  # noqa: E731
        relu = os.path.join(out, "1_relu")
        protocol(worker, relu)

        order = ["relu_honest", "relu_wrong", "relu_edits_input", "relu_crash", "relu_hang",
                 "relu_honest"]
        want = ["ok", "wrong_output", "rejected", "crash", "timeout", "ok"]
        rc, lines = evaluate(tool, relu, [c(n) for n in order], "1", cache)
        check(rc == 0 and len(lines) == len(order), "1_relu at smoke: a verdict for each")
        got = [x["status"] for x in lines]
        check(got == want, "1_relu verdicts %s (want %s)" % (got, want))
        if len(lines) == len(order):
            check("input \"x\" of input set 0 changed" in lines[2]["reason"],
                  "the edited input is named: %s" % lines[2]["reason"])
            check("killed by SIG" in lines[3]["reason"], "the crash names the signal")
            check("timed out after 10 s" in lines[4]["reason"], "the timeout names the limit")
            check(lines[1]["reason"].startswith('output "out" of input set 0: element'),
                  "wrong_output names the element: %s" % lines[1]["reason"])
            check(lines[5]["starts"] == lines[3]["starts"] + 2,
                  "a new worker after the crash and after the timeout (starts %d -> %d)"
                  % (lines[3]["starts"], lines[5]["starts"]))

        rc, lines = evaluate(tool, relu, [c("relu_honest")], "3", cache)
        full = lines[0] if lines else {}
        check(rc == 0 and full.get("status") == "ok" and full.get("samples", 0) > 0,
              "1_relu honest at full: ok and timed")
        check(isinstance(full.get("torch_eager_us"), float) and full["torch_eager_us"] > 0,
              "full tier: torch eager timed in the same process (%s us)"
              % full.get("torch_eager_us"))

        for task, cand in (("2_sum_over_dim", "sum_honest"), ("8_cross_entropy", "ce_honest"),
                           ("10_max_with_indices", "max_honest")):
            rc, lines = evaluate(tool, os.path.join(out, task), [c(cand)], "2", cache)
            check(rc == 0 and [x["status"] for x in lines] == ["ok"] and
                  lines[0]["sets_checked"] == 3, "%s: %s at screen, 3 sets -> ok" % (task, cand))
        # the module's parameters reach the candidate as inputs 1 and 2
        rc, lines = evaluate(tool, os.path.join(out, "12_small_linear"),
                             [c("linear_honest"), c("linear_no_bias")], "2", cache)
        check(rc == 0 and [x["status"] for x in lines] == ["ok", "wrong_output"],
              "12_small_linear: with the parameters ok, without the bias wrong_output")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
