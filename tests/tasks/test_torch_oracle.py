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
  - 2_sum_over_dim at screen: a memoizer keyed by content (outputs kept by a hash of sampled
    input elements) and one keyed by call count -> rejected, "unseen inputs" (timed calls on
    fresh draws: too slow against repeated contents, or wrong); 1_relu: a candidate whose second
    call disagrees with its first -> rejected, "not deterministic";
and the worker's protocol answers (errors naming the field, as kb-sandbox's; the hello's
"confinement"; a --trusted worker times torch and refuses eval, the confined one refuses
torch; under a 30 MiB budget, the sets kept beside an evaluation's peak and a prepare refused,
naming the sizes, when one set does not fit), and a worker without libkb-confine.so next to it
refusing to start unless KB_CONFINE_OPTIONAL=1; and the worker's look at the process's threads
leaving its caller's locals to reference counting (no cycle through its own frame: before, an
evaluation's outputs stayed until the collector ran, 45 of them after one CPU evaluation,
and KernelBench's 7 GiB norms ran an 80 GB card out of memory). Where the build has no libkb-confine.so yet,
the worker runs with KB_CONFINE_OPTIONAL=1 (said on stdout); where it has one, every evaluation
here runs confined.

usage: test_torch_oracle.py IMPORTER TOOL CANDIDATES_DIR WORKER
"""
import functools
import gc
import importlib.util
import json
import os
import platform
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import weakref

from worker_module import load_worker

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = os.path.join(HERE, "kernelbench")
failures = []


def check(cond, what):
    print("%s: %s" % ("ok" if cond else "FAIL", what))
    if not cond:
        failures.append(what)


def evaluate(tool, task, cands, tiers, cache, env=None):
    cmd = [tool, "--backend", "host", "--cache", cache, "--tiers", tiers, task] + cands
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=240, env=env)
    if p.returncode != 0:
        print(p.stderr)
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    for x in lines:
        print("   ", json.dumps(x))
    return p.returncode, lines


LEVELS = ("none", "seccomp", "seccomp+landlock")


def start_worker(worker, rw, extra=()):
    a, b = socket.socketpair()
    p = subprocess.Popen([sys.executable, "-I", worker, "--backend", "host", "--dir", rw,
                          "--ro", os.path.dirname(os.path.dirname(rw))] + list(extra),
                         stdin=b, stdout=b)
    b.close()
    return a, p


def rpc(a, msg, raw=None):
    """One request to the worker on socket `a` (`msg` as JSON, or the bytes `raw`), its reply."""
    data = raw if raw is not None else json.dumps(msg).encode()
    a.sendall(struct.pack(">I", len(data)) + data)
    n = struct.unpack(">I", a.recv(4, socket.MSG_WAITALL))[0]
    return json.loads(a.recv(n, socket.MSG_WAITALL).decode())


def few_sets(worker, task_dir, rw):
    """A worker with a 30 MiB budget (KB_SANDBOX_TORCH_MEMORY: 0.75 x 30 = 22.5 MiB) against
    1_relu in a confined worker: a set takes 4 MiB (the 1 MiB input, its reference, the two
    output buffers) and an evaluation 17 MiB more at its peak (peak_bytes: the 1 MiB references
    of an unseen call beside the comparison's temporaries, 64 bytes an element of its 262144).
    The 3 sets alone would fit (12 MiB; the rule before this one, one set more for the draws,
    kept all 3) but not beside the peak: the first set is kept, said, and one set is checked.
    The same task declared 4 times larger ([64, 16384]: a 16 MiB set, a 68 MiB peak) does not
    fit even with one set: its prepare fails naming the sizes, before the module runs, and the
    task prepared before stays prepared."""
    os.environ["KB_SANDBOX_TORCH_MEMORY"] = str(30 << 20)
    try:
        a, p = start_worker(worker, rw)
    finally:
        del os.environ["KB_SANDBOX_TORCH_MEMORY"]

    call = functools.partial(rpc, a)
    try:
        task = json.load(open(os.path.join(task_dir, "task.json")))
        prepare = {"op": "prepare", "key": "k1", "oracle": os.path.join(task_dir,
                                                                        "reference.py"),
                   "inputs": task["inputs"], "outputs": task["outputs"],
                   "sets": task["input_sets"], "atol": 1e-4, "rtol": 1e-4}
        r = call(prepare)
        check(r.get("ok") is True and r.get("sets") == 1 and r.get("sets_note") ==
              "1 of the task's 3 input sets kept: 3 take 12.0 MiB here and an evaluation 17.0 "
              "MiB more at its peak (inputs drawn again, a call's outputs, references, the "
              "checks' temporaries), more than 75% of the device's 30.0 MiB",
              "the sets alone fit, not beside an evaluation's peak: the first kept, said: %s"
              % r)
        large = [dict(x, shape=[64, 16384]) for x in task["inputs"]]
        r = call(dict(prepare, key="k2", inputs=large,
                      outputs=[dict(x, shape=[64, 16384]) for x in task["outputs"]]))
        check(r.get("ok") is False and r.get("oom") is False and r.get("fatal") is False and
              r.get("reason") == "the task does not fit this worker's memory: one input set "
              "takes 16.0 MiB here and an evaluation 68.0 MiB more at its peak (inputs drawn "
              "again, a call's outputs, references, the checks' temporaries), more than 75% of "
              "the device's 30.0 MiB",
              "one set does not fit beside an evaluation's peak: the prepare fails naming the "
              "sizes: %s" % r)
        r = call(prepare)
        check(r.get("ok") is True and r.get("cached") is True,
              "and the task prepared before is still prepared: %s" % r)
        r = call({"op": "eval", "key": "k1", "library": "/nonexistent.so", "sets": 0,
                  "warmup": 0, "max_samples": 0, "flush_l2": False, "recheck": False})
        check(r.get("status") == "compile_error", "and the task evaluates: %s" % r)
        check(call({"op": "quit"}) == {"op": "bye"}, "quit -> bye")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        a.close()


def protocol(worker, task_dir, rw):
    a, p = start_worker(worker, rw)
    call = functools.partial(rpc, a)
    try:
        h = call({"op": "hello"})
        check(h["op"] == "hello" and h["backend"] == "host" and h["pid"] == p.pid and
              h["worker"] == "pytorch", "hello names the process and the worker")
        conf = h.get("confinement", {})
        check(conf.get("level") in LEVELS and isinstance(conf.get("seccomp"), bool) and
              isinstance(conf.get("landlock_abi"), int) and h.get("trusted") is False,
              "hello says the confinement it will apply: %s" % conf)
        with open("/proc/%d/oom_score_adj" % p.pid) as f:
            adj = f.read().strip()
        check(adj == "1000", "the confined worker is the OOM killer's first choice: %s" % adj)
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
        check(r.get("ok") is True and r.get("cached") is False and r.get("sets") == 3 and
              "sets_note" not in r, "prepare: all 3 sets kept: %s" % r)
        r = call(good)
        check(r.get("ok") is True and r.get("cached") is True, "prepare again is cached")
        r = call({"op": "eval", "key": "k1", "library": "/nonexistent.so", "sets": 0,
                  "warmup": 0, "max_samples": 0, "flush_l2": False, "recheck": False})
        check(r.get("status") == "compile_error", "a library that does not load: %s" % r)
        h2 = call({"op": "hello"})["confinement"]
        check(h2["level"] == conf["level"] and (conf["level"] == "none") ==
              ("unconfined" in conf["note"]), "after an eval, confined as announced: %s (announced %s)" % (h2, conf))
        r = call({"op": "torch", "key": "k1", "sets": 1, "warmup": 0, "max_samples": 2,
                  "flush_l2": False})
        check(r.get("op") == "error" and r.get("field") == "op" and "trusted" in
              r.get("reason", ""), "the confined worker refuses torch: %s" % r)
        r = call(dict(good, key="k5", module_only=True))
        check(r.get("op") == "error" and r.get("field") == "module_only",
              "the confined worker refuses a module-only prepare: %s" % r)
        r = call(dict(good, key="k4"))
        check(r.get("ok") is True, "a second task prepared: %s" % r)
        r = call({"op": "release", "keep": "k4"})
        check(r.get("op") == "release" and r.get("dropped") == 1, "release keeps k4: %s" % r)
        r = call(dict(good, key="k4"))
        check(r.get("cached") is True, "the kept task is still prepared: %s" % r)
        r = call({"op": "release", "keep": 7})
        check(r.get("op") == "error" and r.get("field") == "keep", "keep not a string: %s" % r)
        r = call({"op": "release"})
        check(r.get("dropped") == 1, "release without keep drops every task: %s" % r)
        r = call({"op": "eval", "key": "k4", "library": "/x.so", "sets": 0, "warmup": 0,
                  "max_samples": 0, "flush_l2": False, "recheck": False})
        check(r.get("field") == "key", "a released task is no longer prepared: %s" % r)
        check(call({"op": "quit"}) == {"op": "bye"}, "quit -> bye")
        check(p.wait(timeout=10) == 0, "exit status 0 after quit")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        a.close()


def trusted(worker, task_dir, rw):
    """A --trusted worker: not confined, times torch, refuses eval naming the field."""
    a, p = start_worker(worker, rw, ["--trusted"])

    call = functools.partial(rpc, a)
    try:
        h = call({"op": "hello"})
        check(h.get("trusted") is True and h["confinement"]["level"] == "none",
              "a trusted worker says so, unconfined: %s" % h.get("confinement"))
        task = json.load(open(os.path.join(task_dir, "task.json")))
        r = call({"op": "prepare", "key": "t", "oracle": os.path.join(task_dir, "reference.py"),
                  "inputs": task["inputs"], "outputs": task["outputs"],
                  "sets": task["input_sets"], "atol": 1e-4, "rtol": 1e-4})
        check(r.get("ok") is True, "the trusted worker prepares: %s" % r)
        r = call({"op": "eval", "key": "t", "library": "/x.so", "sets": 0, "warmup": 0,
                  "max_samples": 0, "flush_l2": False, "recheck": False})
        check(r.get("op") == "error" and r.get("field") == "op" and "trusted" in
              r.get("reason", ""), "the trusted worker refuses eval: %s" % r)
        # noise 0: the spread never stops the loop early (a run of 2 samples within the
        # default 0.5% would stop at 2), so the count is the requested maximum
        r = call({"op": "torch", "key": "t", "sets": 1, "warmup": 1, "min_samples": 2,
                  "max_samples": 3, "noise": 0, "max_seconds": 60, "flush_l2": False})
        check(r.get("op") == "torch" and r.get("torch_eager", {}).get("samples") == 3,
              "the trusted worker times torch eager: %s" % r.get("torch_eager"))
        # "modes": one of the two at a time (the runner asks for eager, then for compile)
        r = call({"op": "torch", "key": "t", "modes": ["eager"], "sets": 1, "warmup": 0,
                  "min_samples": 2, "max_samples": 2, "noise": 0, "max_seconds": 60,
                  "flush_l2": False})
        check(r.get("op") == "torch" and r.get("torch_eager", {}).get("samples") == 2 and
              "torch_compile" not in r and "compile" not in r.get("torch_note", ""),
              'modes ["eager"]: eager timed, compile not tried: %s' % r)
        r = call({"op": "torch", "key": "t", "modes": ["compile"], "sets": 1, "warmup": 0,
                  "max_samples": 2, "flush_l2": False})
        check(r.get("op") == "torch" and "torch_eager" not in r,
              'modes ["compile"]: eager not timed: %s' % r)
        for bad in (["eager", "fast"], [], "eager"):
            r = call({"op": "torch", "key": "t", "modes": bad, "sets": 1, "warmup": 0,
                      "max_samples": 2, "flush_l2": False})
            check(r.get("op") == "error" and r.get("field") == "modes",
                  "modes %r is refused, naming the field: %s" % (bad, r))
        # a released task is freed: nothing of the last request holds it (the request loop's
        # `task` local held it until the next request; on a GPU, gigabytes of its sets)
        r = call({"op": "release", "keep": "t"})
        check(r.get("dropped") == 0 and r.get("tasks_alive") == 1,
              "release keeping the task: 1 task alive: %s" % r)
        r = call({"op": "release"})
        check(r.get("dropped") == 1 and r.get("tasks_alive") == 0,
              "release of all after torch requests: no task alive: %s" % r)
        module_only(call, task_dir, task, rw)
        check(call({"op": "quit"}) == {"op": "bye"}, "trusted: quit -> bye")
        check(p.wait(timeout=10) == 0, "trusted: exit status 0 after quit")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        a.close()


def module_only(call, task_dir, task, rw):
    """The trusted worker's prepare for a witness ("module_only"): the module, no input set
    kept, a witness served with the same outputs as the task prepared whole gives (its calls
    cycle over every set the task declares, whatever a worker keeps); a torch request on it
    refused naming the key; a whole prepare of the same key done again (not "cached"), and a
    module-only prepare of a task prepared whole is cached."""
    prep = {"op": "prepare", "key": "m", "oracle": os.path.join(task_dir, "reference.py"),
            "inputs": task["inputs"], "outputs": task["outputs"],
            "sets": task["input_sets"], "atol": 1e-4, "rtol": 1e-4}
    r = call(dict(prep, module_only=True))
    check(r.get("ok") is True and r.get("cached") is False and r.get("sets") == 0 and
          r.get("draw_s", 0) > 0, "a module-only prepare: no set kept, a draw timed: %s" % r)
    r = call({"op": "release", "keep": "m"})
    check(r.get("tasks_alive") == 1, "one task alive, holding no set: %s" % r)
    mine = os.path.join(rw, "witness-reference.bin")
    got = {}
    for key in ("m", "w"):
        if key == "w":
            r = call(dict(prep, key="w"))
            check(r.get("ok") is True and r.get("sets") == len(task["input_sets"]),
                  "the same task prepared whole: %s" % r)
        # 5 calls over the 3 sets' distributions: calls 4 and 5 cycle back to sets 1 and 2
        r = call({"op": "witness", "key": key, "seed": 77, "calls": 5,
                  "path": os.path.join(rw, "unused.bin")})
        check(r.get("status") == "ok" and r.get("calls") == 5,
              "a witness of the task prepared %s: %s" % (
                  "for it only" if key == "m" else "whole", r))
        with open(mine, "rb") as f:
            got[key] = f.read()
    check(len(got["m"]) > 0 and got["m"] == got["w"],
          "the module-only task's witness outputs are the whole task's (%d and %d bytes)"
          % (len(got["m"]), len(got["w"])))
    r = call({"op": "torch", "key": "m", "sets": 1, "warmup": 0, "max_samples": 2,
              "flush_l2": False})
    check(r.get("op") == "error" and r.get("field") == "key" and "module_only" in
          r.get("reason", ""), "a torch request on a module-only task is refused: %s" % r)
    r = call(prep)
    check(r.get("ok") is True and r.get("cached") is False and
          r.get("sets") == len(task["input_sets"]),
          "a whole prepare of a module-only task prepares it again: %s" % r)
    r = call(dict(prep, module_only=True))
    check(r.get("ok") is True and r.get("cached") is True,
          "a module-only prepare of a task prepared whole is cached: %s" % r)
    r = call({"op": "torch", "key": "m", "modes": ["eager"], "sets": 1, "warmup": 0,
              "min_samples": 2, "max_samples": 2, "noise": 0, "max_seconds": 60,
              "flush_l2": False})
    check(r.get("op") == "torch" and r.get("torch_eager", {}).get("samples") == 2,
          "and it times torch: %s" % r.get("torch_eager"))
    r = call({"op": "release"})
    check(r.get("tasks_alive") == 0, "all released: %s" % r)


def no_library(worker, tmp):
    """The worker copied where no libkb-confine.so lies: without KB_CONFINE_OPTIONAL it says why
    on stderr and exits 2 (the start-failure status) before any hello."""
    alone = os.path.join(tmp, "alone")
    os.makedirs(alone)
    copy = os.path.join(alone, "kb_sandbox_torch.py")
    shutil.copy(worker, copy)
    env = {k: v for k, v in os.environ.items() if k != "KB_CONFINE_OPTIONAL"}
    a, b = socket.socketpair()
    p = subprocess.run([sys.executable, "-I", copy, "--backend", "host", "--dir", alone],
                       stdin=b, stdout=b, stderr=subprocess.PIPE, text=True, env=env, timeout=120)
    b.close()
    a.close()
    check(p.returncode == 7 and "libkb-confine.so" in p.stderr and "KB_CONFINE_OPTIONAL" in
          p.stderr, "no libkb-confine.so: exit %d, %s" % (p.returncode, p.stderr.strip()))


def frames_not_held(worker):
    """foreign_threads (the evaluator's look at the process's Python threads, at every check of
    the surface) reads sys._current_frames(), which holds the reading thread's own frame: kept
    in a local, that is a cycle through every caller's frame, and their locals (a call's
    outputs) wait for the collector. With the collector off, a caller's local must go with
    the caller."""
    spec = importlib.util.spec_from_file_location("kb_worker_under_test", worker)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    class Marker:
        pass

    def caller():
        local = Marker()
        mod.foreign_threads(frozenset())
        return weakref.ref(local)

    gc.collect()
    gc.disable()
    try:
        held = caller()() is not None
    finally:
        gc.enable()
    check(not held, "a caller's locals are freed when it returns from foreign_threads (no frame "
          "cycle)")


WIDE_REFERENCE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b, c, d):
        return a.float(), b.int() + 1, c // 2, d * 0.5


def get_inputs():
    return [torch.randn(8, 64).half(), torch.randint(0, 9, (8, 64), dtype=torch.uint8),
            torch.randint(0, 9, (8, 64), dtype=torch.int32), torch.randn(8, 64)]


def get_init_inputs():
    return []
"""


def wide_sets(worker, tool, tmp, cache):
    """A hand-written PyTorch-oracle bundle whose input sets reach past its dtypes (task.json
    allows bounds up to 1e300; kb-sandbox draws in double and stores each value as its dtype
    does: floats rounded, an overflow an infinity, integers clamped to the dtype's range):
    integers in [-1e9, 1e9) for f16, u8, i32 and f32 inputs, uniform [-1e30, 1e30), integers
    in [0, 1e12). The worker drew with torch's own in-place draws, which refuse such bounds
    ("from is out of bounds for c10::Half", "... for unsigned char", "to - 1 is out of bounds
    for int"): the task was never prepared and every candidate infra_error. Now drawn as
    kb-sandbox draws them: prepared, the values as the dtypes hold them, the identity ok at
    screen (every set)."""
    d = os.path.join(tmp, "wide")
    os.makedirs(os.path.join(d, "seeds"))
    with open(os.path.join(d, "reference.py"), "w") as f:
        f.write(WIDE_REFERENCE)
    with open(os.path.join(d, "seeds", "identity.py"), "w") as f:
        f.write(WIDE_REFERENCE + "\nModelNew = Model\n")
    shape = [8, 64]
    inputs = [{"name": n, "dtype": t, "shape": shape}
              for n, t in (("a", "f16"), ("b", "u8"), ("c", "i32"), ("d", "f32"))]
    outputs = [{"name": n, "dtype": t, "shape": shape}
               for n, t in (("o0", "f32"), ("o1", "i32"), ("o2", "i32"), ("o3", "f32"))]
    sets = [{"seed": 1, "distribution": "integers", "low": -1e9, "high": 1e9},
            {"seed": 2, "distribution": "uniform", "low": -1e30, "high": 1e30},
            {"seed": 3, "distribution": "integers", "low": 0, "high": 1e12}]
    with open(os.path.join(d, "task.json"), "w") as f:
        json.dump({"schema": "kernelbrain.task/1", "id": "wide", "name": "wide sets",
                   "backend": "host", "oracle": {"kind": "pytorch", "source": "reference.py"},
                   "inputs": inputs, "outputs": outputs, "tolerance": {"atol": 0, "rtol": 0},
                   "input_sets": sets,
                   "seeds": [{"name": "identity", "source": "seeds/identity.py"}],
                   "baseline": "identity"}, f)
    w = load_worker(worker, with_torch=False)
    w.open_device("host", 0)
    try:
        task = w.prepare_task({"op": "prepare", "key": "wide", "inputs": inputs,
                               "oracle": os.path.join(d, "reference.py"), "outputs": outputs,
                               "sets": sets, "atol": 0, "rtol": 0})
    except w.Failure as e:
        check(False, "wide sets: the worker prepares the task: %s" % e)
        return
    import torch
    a, b, c, x = task.set_inputs[0]
    check(bool(torch.isinf(a).any()) and bool((a[torch.isfinite(a)].abs() <= 65504).all()) and
          bool((a == a.float().round()).all()),
          "wide sets: f16 integers beyond 65504 are infinities, the others whole")
    check(set(b.unique().tolist()) <= set(range(256)) and {0, 255} <= set(b.unique().tolist()),
          "wide sets: u8 integers clamped to 0..255: %s" % b.unique().tolist()[:8])
    check(int(c.min()) < -1000 and int(c.max()) > 1000 and bool((x == x.round()).all()),
          "wide sets: i32 and f32 integers drawn in [-1e9, 1e9)")
    a, b, c, x = task.set_inputs[1]
    check(bool(torch.isinf(a).all()) and bool(torch.isfinite(x).all()) and
          float(x.abs().max()) > 1e28, "wide sets: uniform [-1e30, 1e30): f16 infinite, f32 not")
    _, b, c, _ = task.set_inputs[2]
    check(int(c.max()) == 2**31 - 1 and int(b.max()) == 255,
          "wide sets: integers beyond i32 clamped to 2^31 - 1, u8 to 255")
    rc, lines = evaluate(tool, d, [os.path.join(d, "seeds", "identity.py")], "2", cache)
    check(rc == 0 and [x["status"] for x in lines] == ["ok"] and lines[0]["sets_checked"] == 3,
          "wide sets: the identity ok at screen over the 3 sets: %s"
          % [(x["status"], x.get("reason")) for x in lines])


OWN_WRAP = ("import functools\nimport os\n\n"
            "_src = ('def _wrap(fn):\\n    @functools.wraps(fn)\\n'\n"
            "        '    def inner(*a, **k):\\n        return fn(*a, **k)\\n    return inner\\n')\n"
            "_ns = {'functools': functools}\n"
            "exec(compile(_src, os.path.join(os.path.dirname(torch.__file__), '_compile.py'), "
            "'exec'), _ns)\n_wrap = _ns['_wrap']\n")
SETTING_REFERENCES = {
    "dtype": ("torch.set_default_dtype(torch.float64)\n", ""),
    "denormals": ("", "        torch.set_flush_denormal(True)\n"),
    "threads": ("", "        torch.set_num_threads(1)\n"),
    "patch": ("import torch.nn.functional as F\n\nF.gelu = lambda x, approximate=\"none\": x\n",
              ""),
    "uses_gelu": ("import torch.nn.functional as F\n\n"
                  "assert F.gelu(torch.ones(1)).item() < 0.9, \"F.gelu is replaced\"\n", ""),
    # torch's own rebinding when it first imports a module (torch 2's torch._dynamo wraps
    # torch.manual_seed with torch._disable_dynamo): a wrapper whose code is in torch's
    # _compile.py, its __wrapped__ the function it replaces (torch 1.13 here has no dynamo:
    # the wrapper's file name is torch's, its code the test's)
    "own_wrap": (OWN_WRAP + "torch.manual_seed = _wrap(torch.manual_seed)\n", ""),
    # the same wrapper around another function, and torch.autocast's wrapper (it changes the
    # dtype F.gelu computes in): the task's changes
    "own_wrap_other": (OWN_WRAP + "torch.manual_seed = _wrap(lambda seed: None)\n", ""),
    "seed_kept": ("assert hasattr(torch.manual_seed, \"__wrapped__\"), \"unwrapped\"\n", ""),
    "gelu_plain": ("import torch.nn.functional as F\n\n"
                   "assert not hasattr(F.gelu, \"__wrapped__\"), \"F.gelu is wrapped\"\n", ""),
    "autocast_wrap": ("import torch.nn.functional as F\n\n"
                      "F.gelu = torch.autocast(\"cpu\", dtype=torch.bfloat16)(F.gelu)\n", ""),
    "mode": ("from torch.utils._python_dispatch import TorchDispatchMode\n\n\n"
             "class Passthrough(TorchDispatchMode):\n"
             "    def __torch_dispatch__(self, func, types, args=(), kwargs=None):\n"
             "        return func(*args, **(kwargs or {}))\n\n\n"
             "Passthrough().__enter__()\n", "")}


def task_settings(worker, task_dir, tmp, rw):
    """Hand-written bundles whose reference.py changes the worker's process-wide settings at
    prepare (the importer refuses such files; a bundle written by hand meets only the worker,
    which runs several tasks in one process): torch.set_default_dtype(torch.float64) at its top
    level, torch.set_flush_denormal(True) in forward(), F.gelu replaced at its top level (the
    next task's reference ran the replacement): the prepare fails naming the setting,
    set back, and 1_relu prepared next in the same worker is f32 (it was not prepared: "input
    "x" is float64, the task says f32"); torch.set_num_threads(1) in forward() (speed only):
    prepared, set back; a dispatch mode entered at its top level (cannot be set back): the
    prepare fails, fatal, and the worker exits."""
    task = json.load(open(os.path.join(task_dir, "task.json")))
    relu = {"op": "prepare", "oracle": os.path.join(task_dir, "reference.py"),
            "inputs": task["inputs"], "outputs": task["outputs"], "sets": task["input_sets"],
            "atol": 1e-4, "rtol": 1e-4}
    files = {}
    for name, (top, fwd) in SETTING_REFERENCES.items():
        files[name] = os.path.join(tmp, "settings_%s.py" % name)
        with open(files[name], "w") as f:
            f.write("import torch\nimport torch.nn as nn\n%s\n\nclass Model(nn.Module):\n"
                    "    def forward(self, x):\n%s        return torch.relu(x)\n\n\n"
                    "def get_inputs():\n    return [torch.randn(16, 16384)]\n\n\n"
                    "def get_init_inputs():\n    return []\n" % (top, fwd))
    a, p = start_worker(worker, rw)
    call = functools.partial(rpc, a)
    try:
        threads = call(dict(relu, key="threads0"))
        for name, setting, was, now in (("dtype", "torch.get_default_dtype()", "torch.float32",
                                         "torch.float64"),
                                        ("denormals", "torch.set_flush_denormal", "False",
                                         "True")):
            r = call(dict(relu, key=name, oracle=files[name]))
            check(r.get("ok") is False and r.get("fatal") is False and r.get("reason", "")
                  .startswith("reference.py changes %s (%s, then %s) at prepare: the worker "
                              "runs other tasks in this process" % (setting, was, now)),
                  "settings: %s changed at prepare: refused, named: %s" % (name, r))
            r = call(dict(relu, key="after_" + name))
            check(r.get("ok") is True and r.get("cached") is False,
                  "settings: 1_relu prepared after it in the same worker: %s" % r)
        r = call(dict(relu, key="patch", oracle=files["patch"]))
        check(r.get("ok") is False and r.get("reason", "").startswith(
              "reference.py replaces torch.nn.functional.gelu at prepare: the worker runs other "
              "tasks in this process"), "settings: F.gelu replaced: refused, named: %s" % r)
        r = call(dict(relu, key="uses_gelu", oracle=files["uses_gelu"]))
        check(r.get("ok") is True, "settings: F.gelu set back for the next task: %s" % r)
        r = call(dict(relu, key="own_wrap", oracle=files["own_wrap"]))
        check(r.get("ok") is True, "settings: torch's own dynamo-disable wrapper around "
              "torch.manual_seed (torch 2 imports torch._dynamo): prepared: %s" % r)
        r = call(dict(relu, key="seed_kept", oracle=files["seed_kept"]))
        check(r.get("ok") is True, "settings: torch's own wrapper kept for the next task: %s" % r)
        for name, what in (("own_wrap_other", "replaces torch.manual_seed"),
                           ("autocast_wrap", "replaces torch.nn.functional.gelu")):
            r = call(dict(relu, key=name, oracle=files[name]))
            check(r.get("ok") is False and r.get("reason", "").startswith(
                  "reference.py %s at prepare" % what),
                  "settings: %s: refused, named: %s" % (name, r))
        r = call(dict(relu, key="gelu_plain", oracle=files["gelu_plain"]))
        check(r.get("ok") is True, "settings: F.gelu set back after autocast's wrapper: %s" % r)
        r = call(dict(relu, key="threads", oracle=files["threads"]))
        check(r.get("ok") is True and threads.get("ok") is True,
              "settings: a reference setting torch's threads (speed only) prepared: %s" % r)
        r = call(dict(relu, key="mode", oracle=files["mode"]))
        check(r.get("ok") is False and r.get("fatal") is True and
              "torch dispatch modes entered (0, then 1)" in r.get("reason", ""),
              "settings: a dispatch mode left entered: refused, fatal: %s" % r)
        try:
            code = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            code = None
        check(code == 3, "settings: the worker exits after the fatal refusal (%s)" % code)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        a.close()
    # a thread forward() starts and leaves running: every candidate evaluated after it was
    # rejected for it ("a thread it started was still running"), honest ones included
    thread = os.path.join(tmp, "settings_thread.py")
    with open(thread, "w") as f:
        f.write("import threading\nimport time\n\nimport torch\nimport torch.nn as nn\n\n\n"
                "class Model(nn.Module):\n    def forward(self, x):\n        threading.Thread("
                "target=time.sleep, args=(5,), daemon=True).start()\n"
                "        return torch.relu(x)\n\n\n"
                "def get_inputs():\n    return [torch.randn(16, 16384)]\n\n\n"
                "def get_init_inputs():\n    return []\n")
    a, p = start_worker(worker, rw)
    try:
        r = rpc(a, dict(relu, key="thread", oracle=thread))
        check(r.get("ok") is False and r.get("fatal") is True and r.get("reason", "").startswith(
              "reference.py leaves a thread running after prepare (at ") and "join it before "
              "forward() returns" in r.get("reason", ""),
              "settings: a thread left running by forward(): refused, fatal: %s" % r)
        try:
            code = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            code = None
        check(code == 3, "settings: the worker exits after it (%s)" % code)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        a.close()


def main(argv):
    importer, tool, cands, worker = argv[1:5]
    built = os.path.join(os.path.dirname(tool), "kb_sandbox_torch.py")
    if os.path.isfile(built):
        worker = built  # the build's copy: libkb-confine.so lies next to it once built
    if not os.path.isfile(os.path.join(os.path.dirname(worker), "libkb-confine.so")):
        print("note: no libkb-confine.so next to %s: the worker runs unconfined here "
              "(KB_CONFINE_OPTIONAL=1)" % worker)
        os.environ["KB_CONFINE_OPTIONAL"] = "1"
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
        rw = os.path.join(tmp, "rw")
        os.makedirs(rw)
        frames_not_held(worker)
        protocol(worker, relu, rw)
        few_sets(worker, relu, rw)
        trusted(worker, relu, rw)
        no_library(worker, tmp)
        wide_sets(worker, tool, tmp, cache)
        task_settings(worker, relu, tmp, rw)

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

        # torch eager timed by the confined worker beside each candidate (same process,
        # interleaved), never by the trusted worker; the task's torch.compile request made once
        # and reused by the next full-tier evaluation in the same evaluator
        # (kb__evaluator_set_torch_reuse)
        p = subprocess.run([tool, "--backend", "host", "--cache", cache, "--tiers", "3", relu,
                            c("relu_honest"), c("relu_honest")], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=240,
                           env=dict(os.environ, KB_LOG="debug"))
        two = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
        check(p.returncode == 0 and len(two) == 2 and
              all(isinstance(x.get("torch_eager_us"), float) for x in two) and
              p.stderr.count("torch eager's samples in the same process") == 2 and
              p.stderr.count("torch eager timed in") == 0 and
              p.stderr.count("torch compile times reused") == 1,
              "full tier twice on one task: eager timed beside each candidate in the same "
              "process (%s), the trusted worker asked for compile once and reused"
              % [x.get("torch_eager_us") for x in two])
        if p.returncode != 0 or len(two) != 2:
            print(p.stderr[-3000:])

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

        # results kept between calls: caught by the timed calls on unseen inputs
        rc, lines = evaluate(tool, os.path.join(out, "2_sum_over_dim"),
                             [c("sum_memo_content"), c("sum_memo_count"), c("sum_honest")], "2",
                             cache)
        got = [(x["status"], x["reason"]) for x in lines]
        check(rc == 0 and len(got) == 3, "2_sum_over_dim memoizers: a verdict for each")
        if len(got) == 3:
            check(got[0][0] == "rejected" and "times on unseen inputs" in got[0][1] and
                  "results kept between calls" in got[0][1],
                  "memoized by content: rejected, slow on unseen inputs: %s" % (got[0],))
            check(got[1][0] == "rejected" and "unseen inputs" in got[1][1],
                  "memoized by call count: rejected on unseen inputs: %s" % (got[1],))
            check(got[2][0] == "ok", "the honest sum after them: ok")
        rc, lines = evaluate(tool, relu, [c("relu_racy"), c("relu_honest")], "1", cache)
        got = [(x["status"], x["reason"]) for x in lines]
        check(rc == 0 and len(got) == 2 and got[0][0] == "rejected" and
              "not deterministic" in got[0][1] and got[1][0] == "ok",
              "1_relu: second call disagrees -> not deterministic; honest ok: %s" % (got,))
        # lazy evaluation through a fault handler: the call leaves its output inaccessible and
        # a SIGSEGV handler computes it when the worker first touches it, after the timer
        # stopped (ok at screen at some 80 us against the honest 1150 us before 2026-12-07):
        # the filter refuses the handler (runner/sandbox/confine.c, sigaction_rules)
        # (x86-64: the candidate finds libc's functions with a raw futex(2) probe)
        if platform.machine() == "x86_64":
            rc, lines = evaluate(tool, relu, [c("relu_lazy_fault"), c("relu_honest")], "2",
                                 cache)
            got = [(x["status"], x["reason"]) for x in lines]
            check(rc == 0 and len(got) == 2 and got[0][0] == "rejected" and
                  "called rt_sigaction(2)" in got[0][1] and got[1][0] == "ok",
                  "1_relu: work left to a SIGSEGV handler -> rejected; honest ok: %s" % (got,))
        # native threads of a C library (foreign_threads sees Python threads only): one doing
        # each call's work after the call returned (relu_thread_after_return.c, ok at screen
        # at 17 us a call before 2026-12-07) and one left spinning (relu_spinner.c, which got
        # the honest relu after it rejected by the witness at the full tier): rejected at the
        # first check (Surface.watch_native), the worker replaced, the honest file after ok
        if platform.machine() == "x86_64":
            rc, lines = evaluate(tool, relu, [c("relu_thread_after_return"), c("relu_spinner"),
                                              c("relu_honest")], "2", cache)
            got = [(x["status"], x["reason"]) for x in lines]
            check(rc == 0 and len(got) == 3 and
                  all(g[0] == "rejected" and "a native thread it started was still running"
                      in g[1] for g in got[:2]) and got[2][0] == "ok" and
                  lines[2]["starts"] == lines[1]["starts"] + 1,
                  "1_relu: native threads of a C library -> rejected, a new worker, the honest "
                  "one ok: %s (starts %s)" % (got, [x.get("starts") for x in lines]))
        # the C library's clock_gettime rewritten in place (relu_text_patch.c, the protection
        # put back): ok at screen at 33.5 us for its 1374 us before 2026-12-07, and the honest
        # relu after it in that worker timed 40x fast too; now the worker's own code is held
        # (Confinement.code_changed): rejected, a new worker, the honest one ok
        if platform.machine() == "x86_64":
            rc, lines = evaluate(tool, relu, [c("relu_text_patch"), c("relu_honest")], "2",
                                 cache)
            got = [(x["status"], x["reason"]) for x in lines]
            check(rc == 0 and len(got) == 2 and got[0][0] == "rejected" and
                  "changed the worker's own process: the code of" in got[0][1] and
                  got[1][0] == "ok" and lines[1]["starts"] == lines[0]["starts"] + 1,
                  "1_relu: libc's clock rewritten -> rejected, a new worker, the honest one "
                  "ok: %s" % (got,))
        # the confinement: a raw socket(2) is rejected naming the call; the runner's (here
        # kb-test-torch-eval's) environment holds a canary the candidate must not read
        if platform.machine() == "x86_64":
            canary = "kb-canary-%s" % os.urandom(8).hex()
            env = dict(os.environ, KB_TEST_SECRET=canary)
            rc, lines = evaluate(tool, os.path.join(out, "2_sum_over_dim"),
                                 [c("sum_socket"), c("sum_parent_environ"), c("sum_honest")],
                                 "1", cache, env)
            got = [(x["status"], x["reason"]) for x in lines]
            check(rc == 0 and len(got) == 3 and got[0][0] == "rejected" and
                  "called socket(2), which candidates may not use" in got[0][1],
                  "raw socket(2) in the confined worker: rejected, named: %s" % (got[:1],))
            check(len(got) == 3 and got[1][0] == "ok" and got[2][0] == "ok" and
                  all(canary not in json.dumps(x) for x in lines),
                  "/proc/<parent>/environ out of reach (ok, canary unseen): %s" % (got[1:],))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
