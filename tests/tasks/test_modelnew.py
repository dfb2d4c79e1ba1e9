"""KernelBench-format candidates (class ModelNew) on the CPU (ctest tasks_modelnew): two files of
tests/tasks/kernelbench/ imported as host tasks, then the .py candidates of
tests/tasks/modelnew_candidates/ evaluated through the runner's evaluator (compile tier:
kb_build_modelnew.py into the content-addressed cache; then the confined PyTorch worker) with
kb-test-torch-eval:
  - 1_relu at smoke: plain torch -> ok, labelled torch_only; wrong -> wrong_output; a Python
    syntax error, no ModelNew, a load_inline extension that does not build -> compile_error
    with the reason; importing subprocess -> rejected by the static rules; an in-place edit of
    its input -> rejected; outputs kept by input address -> rejected on unseen inputs; a
    process started from forward() past the static rules -> rejected, the process named;
    `nvcc --version` asked the same way (a library's probe) -> ok, answered from the worker's
    recording, the same worker process going on;
    os.system through an import alias -> rejected by the static rules; a torch.Tensor subclass
    as output (lazy evaluation after the timed call) -> rejected;
    the same file again -> a cache hit (no second build);
  - 1_relu at smoke, candidates that change the evaluator from inside its process (the clock,
    torch.Tensor.__le__, a constant of the worker, TF32, a dispatch mode left entered) ->
    rejected, what changed named, a new worker each; cuDNN's autotuner -> ok, set back;
  - 1_relu at smoke, candidates that leave the process's settings or the imports changed for
    the next ones -> ok, set back (a probe after each finds nothing); an out-of-memory error
    of the file's own, a KeyboardInterrupt -> crash, the worker going on; a reply forged on the
    worker's protocol socket -> rejected, a new worker;
  - 1_relu at smoke, load_inline files whose module level (run by the compile tier) writes
    into the cache beside its build folder or opens a TCP connection -> compile_error,
    PermissionError (the builder's Landlock rules), nothing written; one that starts a process
    in a session of its own -> compile_error, the process killed when the build ends; one that
    connects to unix sockets this test listens on (stream, datagram) -> compile_error,
    PermissionError (the builder's seccomp filter), nothing reached them;
  - 12_small_linear at smoke: ModelNew with its own nn.Linear (built under the task's seed, so
    the parameters are Model's) -> ok; a constructor that is not Model's -> compile_error;
  - tasks/host/gelu (a C oracle): a ModelNew is compile_error, "runs only on a task with a
    pytorch oracle";
  - 1_relu at full: the identity ModelNew = Model timed against torch eager in the same ladder
    tier (same input sets, same timer, same procedure): the ratio near 1;
  - kernelbench_extra/18_cuda_inputs.py (inputs made with .cuda(), device="cuda" and
    .to("cuda")): imported for the host, its identity ok there;
  - kernelbench_extra/17_dropout.py (a dropout in training mode): imported with a warning, its
    identity ok, the same ReLU without the dropout wrong_output;
  - kernelbench_extra/19_view_outputs.py, 20_bom_crlf_prints.py, 21_host_random.py,
    23_shared_outputs.py, 24_f64_outputs.py, 25_jit_script.py, 26_module_draws.py,
    27_nonfinite.py, 29_big_int64.py (view outputs, a BOM with CRLF and prints, NumPy's and
    Python's generators, outputs sharing memory, f64, torch.jit.script, tensors drawn at module
    level, NaN and infinities in the reference, i64 beyond 2^53): imported (--json's stdout
    JSON only), each identity ok at smoke and full, a wrong slice, a wrong f64 sum, NaN turned
    into 0 and an i64 off by one wrong_output;
    28_all_nan.py (an output NaN everywhere): not prepared, the output named;
    22_buffer_counter.py, 30_own_generator.py, 36_call_counter.py, 37_running_stats.py
    (references whose outputs change from call to call) and a hand-written bundle whose
    reference edits its input: not prepared, the cause named;
  - kernelbench_extra/41_large_relu.py (outputs the witness samples): the identity ok at full,
    a file that computes only the sampled positions, learnt from the seed, rejected.

usage: test_modelnew.py IMPORTER TOOL CANDIDATES_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = os.path.join(HERE, "kernelbench")
# the identity against eager on a loaded 2-core CI machine, wall-clock timing of a ~60 us call
# (measured 0.99x to 1.32x here, 1.311x and 2.192x in clean-clone CI runs with other tests
# beside it, when eager was timed in another process; 1.37x beside a CI run with eager
# interleaved in the same process, 2026-12-06). So the CPU test only catches a harness error of
# a unit or a factor (a ms read as us, calls counted twice); the measurement itself is the
# GPU's (docs/tasks.md)
IDENTITY_RANGE = (0.25, 4.0)
failures = []


def check(cond, what):
    print("%s: %s" % ("ok" if cond else "FAIL", what))
    if not cond:
        failures.append(what)


def evaluate(tool, task, cands, tiers, cache, env=None, err=None):
    """kb-test-torch-eval's verdicts (rc, lines); with `err` (a list) its stderr appended."""
    cmd = [tool, "--backend", "host", "--cache", cache, "--tiers", tiers, task] + cands
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=240, env=env)
    if p.returncode != 0:
        print(p.stderr)
    if err is not None:
        err.append(p.stderr)
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    for x in lines:
        print("   ", json.dumps(x))
    return p.returncode, lines


def relu_smoke(tool, relu, c, cache):
    order = ["relu_torch", "relu_wrong", "relu_syntax", "relu_no_modelnew", "relu_no_build",
             "relu_subprocess", "relu_edits_input", "relu_memo_ptr", "relu_probe_nvcc",
             "relu_probe_platform", "relu_spawn_hidden", "relu_alias_system",
             "relu_lazy_subclass", "relu_gc_finalizer", "relu_torch"]
    want = ["ok", "wrong_output", "compile_error", "compile_error", "compile_error",
            "rejected", "rejected", "rejected", "ok", "ok", "rejected", "rejected", "rejected",
            "wrong_output", "ok"]
    rc, lines = evaluate(tool, relu, [c(n) for n in order], "1", cache)
    check(rc == 0 and len(lines) == len(order), "1_relu at smoke: a verdict for each")
    got = [x["status"] for x in lines]
    check(got == want, "1_relu verdicts %s (want %s)" % (got, want))
    if len(lines) != len(order):
        return
    why = dict((n, x["reason"]) for n, x in zip(order, lines))
    check(lines[0]["label"] == "torch_only" and lines[0]["sets_checked"] == 1,
          "plain torch: ok, labelled torch_only (not a kernel): %s" % lines[0]["label"])
    check(why["relu_wrong"].startswith('output "out" of input set 0: element'),
          "wrong_output names the element: %s" % why["relu_wrong"])
    check("syntax error at line 6" in why["relu_syntax"], "the syntax error's line is named")
    check("no ModelNew" in why["relu_no_modelnew"], "no ModelNew is named")
    check('extension "kb_test_relu_bad" does not build' in why["relu_no_build"] and
          "tmpkb." not in why["relu_no_build"],
          "the extension that does not build is named: %s" % why["relu_no_build"])
    check("static rule" in why["relu_subprocess"] and "subprocess" in why["relu_subprocess"],
          "importing subprocess: refused by the static rules before it runs")
    check('modified its inputs' in why["relu_edits_input"] and 'input "x"' in
          why["relu_edits_input"], "the edited input is named: %s" % why["relu_edits_input"])
    check("unseen input" in why["relu_memo_ptr"],
          "outputs kept by input address: caught on unseen inputs: %s" % why["relu_memo_ptr"])
    probe, plat, hidden = lines[8], lines[9], lines[10]
    check(plat["status"] == "ok" and plat["starts"] == probe["starts"],
          "platform.architecture() and processor() after confinement: answered from the "
          "recording, no process (%s: %s)" % (plat["status"], plat["reason"]))
    check(probe["status"] == "ok" and hidden["starts"] == probe["starts"],
          "`nvcc --version` after confinement: answered from the recording, no process, the "
          "worker goes on (%s; worker starts %d, then %d)" % (probe["status"], probe["starts"],
                                                             hidden["starts"]))
    check("clone" in hidden["reason"] and "start a process: subprocess.Popen: true; "
          in hidden["reason"] and "from candidate.py:12 forward" in hidden["reason"],
          "a process started past the static rules: rejected, what and where named: %s %s"
          % (hidden["reason"], hidden.get("output", "")[-300:]))
    check("static rule: line 10 uses os.system (as kb_os.system)" in why["relu_alias_system"],
          "an aliased os.system: refused by the static rules: %s" % why["relu_alias_system"])
    check("torch.Tensor subclass (Lazy)" in why["relu_lazy_subclass"],
          "a tensor subclass as output (lazy: the work done when the evaluator reads it, after "
          "the timed call): rejected: %s" % why["relu_lazy_subclass"])
    check(why["relu_gc_finalizer"].startswith('output "out" of input set 0: element'),
          "work left to a finalizer the collector runs after the timed call: the collector is "
          "off until the outputs are copied, so the output is wrong: %s"
          % why["relu_gc_finalizer"])
    # the cache hit is the compile result's own flag: wall times of two worker starts on a
    # loaded CI machine order either way (2.03 s against a first 1.72 s under ASan)
    check(lines[0].get("compile_cached") is False and lines[-1].get("compile_cached") is True,
          "the same file again: from the cache (first compile_cached %s, again %s)"
          % (lines[0].get("compile_cached"), lines[-1].get("compile_cached")))
    built = [n for n in os.listdir(cache) if n.endswith(".kb")]
    failed = [n for n in os.listdir(cache) if n.endswith(".kb.err")]
    check(len(built) == 9 and len(failed) == 5, "cache: 9 builds (%d), 5 failures kept (%d)"
          % (len(built), len(failed)))


def tampering(tool, relu, c, cache):
    """Candidates that change the evaluator from inside its process (class Surface of the
    worker): the clock, a comparison operator of torch, a constant of the worker, a precision
    setting of torch, a dispatch mode left entered, torch.Tensor.copy_ replaced by one that does
    the work when the outputs are copied out and puts itself back, a profile function doing the
    same, the evaluator's timer moved through a frame (sys._getframe, inspect.currentframe, a
    traceback's tb_frame) or found by gc.get_objects: each rejected with what it changed or
    reached for named, and the worker restarted; cuDNN's autotuner turned on is ok and set
    back for the next; standard features that read a caller's frame for their own use
    (namedtuple, enum, dataclasses, logging, warnings) are ok."""
    order = ["relu_patch_clock", "relu_patch_compare", "relu_patch_worker", "relu_patch_flags",
             "relu_mode_left", "relu_patch_restore", "relu_profile_hook",
             "relu_timer_getframe", "relu_timer_inspect", "relu_timer_gc",
             "relu_timer_traceback", "relu_aten_copy", "relu_autotune", "relu_expects_defaults",
             "relu_stdlib_frames", "relu_torch"]
    # found during the evaluation, before the evaluator reads the outputs (Run.settle): a
    # function replaced and put back by the time the evaluation ends, an interpreter hook
    during = {"relu_patch_restore": "torch.Tensor.copy_ was replaced",
              "relu_aten_copy": "the aten kernels registered through torch.library was (), "
                                "is ('aten/copy_/CPU',)"}
    named = {"relu_patch_clock": "time.perf_counter was replaced",
             "relu_patch_compare": "torch.Tensor.__le__ was replaced",
             "relu_patch_worker": "the worker's UNSEEN_RATIO was replaced",
             "relu_patch_flags": "torch.backends.cuda.matmul.allow_tf32 was False, is True",
             "relu_mode_left": "torch dispatch modes entered was 0, is 1",
             # reaching for the evaluator's frames or objects (refuse_introspection); setting
             # a profile function is refused there too, before it could run
             "relu_profile_hook": "it reached for sys.setprofile from candidate.py",
             "relu_timer_getframe": "it reached for sys._getframe from candidate.py",
             "relu_timer_inspect": "it reached for sys._getframe from candidate.py",
             "relu_timer_gc": "it reached for gc.get_objects from candidate.py",
             "relu_timer_traceback": "it reached for the attribute tb_frame from candidate.py"}
    rc, lines = evaluate(tool, relu, [c(n) for n in order], "1", cache)
    got = [x["status"] for x in lines]
    want = ["rejected"] * 12 + ["ok"] * 4
    check(rc == 0 and got == want, "tampering verdicts %s (want %s)" % (got, want))
    if len(lines) != len(order):
        return
    for n, x in zip(order, lines):
        if n in named:  # found after the evaluation or, where it shows by then, before a copy
            check(x["reason"].startswith("changed the evaluator") and named[n] in x["reason"]
                  and x["median_us"] is None, "%s: rejected, named: %s" % (n, x["reason"]))
        if n in during:
            check(x["reason"].startswith("changed the evaluator during the evaluation: " +
                                         during[n]) and x["median_us"] is None,
                  "%s: rejected mid-evaluation, named: %s" % (n, x["reason"]))
    starts = [x["starts"] for x in lines]
    check(all(starts[k + 1] > starts[k] for k in range(12)) and starts[12] == starts[15],
          "a new worker after each change, the same one after the autotuner and the honest "
          "files: starts %s" % starts)


def leaks(tool, relu, c, cache):
    """Candidates that leave the worker changed for the next ones without changing what the
    evaluator checks (found 2026-12-07, each ok then and the change kept): the process's and
    the interpreter's settings (CPU affinity, switch interval, collector, recursion limit,
    warning filters, oneDNN, denormals, umask, environment) and what a later import finds
    (sys.modules entries replaced or planted, an import hook, a builtin added): each ok and set
    back, relu_probe_leaks.py after each finds none of it, the same worker going on; a file
    planted in the worker's copies of the builds' JIT caches: gone for the next evaluation
    (relu_jit_probe.py ok). An
    out-of-memory error of the file's own making: crash, not the device's infra_error; a
    KeyboardInterrupt from forward: crash naming it, the worker going on. Then a reply written
    on the worker's protocol socket from forward(): rejected (no nonce), a new worker, and the
    honest file after it ok."""
    order = ["relu_leak_settings", "relu_probe_leaks", "relu_leak_imports", "relu_probe_leaks",
             "relu_jit_plant", "relu_jit_probe", "relu_fake_oom", "relu_interrupt",
             "relu_forge_reply", "relu_torch"]
    rc, lines = evaluate(tool, relu, [c(n) for n in order], "1", cache)
    got = [x["status"] for x in lines]
    check(rc == 0 and got == ["ok"] * 6 + ["crash", "crash", "rejected", "ok"],
          "leaks verdicts %s (want 6 ok, 2 crash, rejected, ok)" % got)
    if len(lines) != len(order):
        return
    for k in (1, 3, 5):
        check(lines[k]["status"] == "ok", "%s after %s: nothing left (%s)"
              % (order[k], order[k - 1], lines[k]["reason"]))
    check(lines[6]["reason"].startswith("ModelNew.forward raised RuntimeError on input set 0 "
                                        "(check call): CUDA out of memory"),
          "an out-of-memory error of its own: the candidate's crash: %s" % lines[6]["reason"])
    check(lines[7]["reason"].startswith("ModelNew.forward raised KeyboardInterrupt on input "
                                        "set 0"),
          "KeyboardInterrupt from forward: crash, named: %s" % lines[7]["reason"])
    why = lines[8]["reason"]
    check(why.startswith("wrote on the sandbox's protocol socket: a reply without the "
                         "request's nonce") and lines[8]["median_us"] is None,
          "a reply forged on the protocol socket: rejected, no timing: %s" % why)
    starts = [x["starts"] for x in lines]
    check(starts[0] == starts[8] and starts[9] > starts[8],
          "the same worker through the set-backs and the crashes, a new one after the forged "
          "reply: starts %s" % starts)
    # threads no Python frame shows, left in the worker (torch's pool grown to four): the
    # verdict stays ok, the worker is replaced after the evaluation (threads_left), and an
    # honest file leaves nothing to replace it for
    order = ["relu_more_threads", "relu_torch", "relu_torch"]
    rc, lines = evaluate(tool, relu, [c(n) for n in order], "1", cache)
    got = [x["status"] for x in lines]
    starts = [x["starts"] for x in lines]
    check(rc == 0 and got == ["ok"] * 3 and len(starts) == 3 and starts[1] == starts[0] + 1 and
          starts[2] == starts[1],
          "threads left by torch for a ModelNew: ok, the worker replaced after it only (%s, "
          "starts %s)" % (got, starts))


def reference_tampering(tool, linear, c, cache):
    """Candidates that slow down, in the worker's process, the task's own module it is compared
    with (torch eager and the same-run baseline are timed there, interleaved with the
    candidate; the references of the unseen calls are computed there), or make its references
    agree with stale outputs (class Reach of the worker): torch.nn.functional.linear replaced,
    a global forward pre-hook registered, nn.Linear.forward replaced, a memoizer that
    replaces torch.nn.functional.linear to return what it kept, and a thread that keeps the
    interpreter busy while the candidate is not calling (foreign_threads); and one that gives
    its own code torch's file name to pass the frame checks as torch (CODE_EVENTS); one that
    slows the same-run baseline's own module (Surface.keep_baseline), with an
    honest file that imports standard modules not loaded yet after it. Each rejected at full with what
    it changed named, before any timing is reported. Then three that first turn the worker's
    own checks off (reached through sys.modules["__main__"]), which only the witness catches
    (runner/witness.h): the reference slowed, the worker's timer forged, the worker's
    comparison forged over zeros. The honest files after them are ok (a new worker after each
    witness verdict) and the last one's eager is the task's module's own time (the identity
    range of its same-run baseline)."""
    order = ["linear_slow_reference", "linear_slow_reference_hook", "linear_slow_reference_class",
             "linear_patch_oracle", "linear_slow_reference_thread", "linear_spoof_name",
             "linear_slow_baseline", "linear_unchecked_slow_reference", "linear_forge_timer",
             "linear_forge_check", "linear_imports", "linear_torch"]
    named = {"linear_slow_reference": "torch.nn.functional.linear was replaced",
             "linear_slow_reference_hook": "torch.nn.modules.module._global_forward_pre_hooks "
                                           "was changed",
             "linear_slow_reference_class": "torch.nn.Linear.forward was replaced",
             "linear_patch_oracle": "torch.nn.functional.linear was replaced",
             "linear_slow_reference_thread": "a thread it started was still running (at "
                                             "candidate.py:",
             "linear_spoof_name": "it reached for code.__new__ of code named ",
             "linear_slow_baseline": "the same-run baseline's module's class Model.forward was "
                                     "replaced",
             "linear_unchecked_slow_reference": "slowed the reference in its process: torch "
                                                "eager took ",
             "linear_forge_timer": "timing not confirmed outside its process: its samples say "
                                   "0.5 us a call",
             "linear_forge_check": "wrong on inputs drawn after the runner asked, read outside "
                                   "its process: output \"out\" of witness call 1 of "}
    rc, lines = evaluate(tool, linear, [c(n) for n in order], "3", cache)
    got = [x["status"] for x in lines]
    check(rc == 0 and got == ["rejected"] * 10 + ["ok"] * 2,
          "reference tampering verdicts %s (want 10 rejected, then 2 ok)" % got)
    for n, x in zip(order, lines):
        if n in named:
            check(named[n] in x["reason"] and x["median_us"] is None and
                  x["torch_eager_us"] is None and x["same_run_speedup"] is None,
                  "%s: rejected, named, no timing kept: %s" % (n, x["reason"]))
    if len(lines) == len(order):
        srs = lines[-1].get("same_run_speedup")
        check(isinstance(srs, float) and IDENTITY_RANGE[0] <= srs <= IDENTITY_RANGE[1],
              "the honest file after them against its same-run baseline: %sx" % srs)


def build_confined(tool, relu, c, cache):
    """A load_inline file's module level runs in the compile tier: confined there by Landlock
    (kb_build_modelnew.confine_writes). A write beside its build folder, into the cache, and a
    TCP connection: each compile_error, PermissionError, nothing written."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))  # Landlock's ABI
    if abi < 4:
        print("note: Landlock ABI %d on this kernel (4 needed for TCP): the compile tier's "
              "confinement is not checked" % abi)
        return
    rc, lines = evaluate(tool, relu, [c("relu_build_escape"), c("relu_build_connect")], "1",
                         cache)
    got = [(x["status"], x["reason"]) for x in lines]
    check(rc == 0 and len(got) == 2 and all(st == "compile_error" and "PermissionError" in why
                                            for st, why in got),
          "the compile tier's writes outside its folder and TCP refused: %s" % got)
    check(not os.path.exists(os.path.join(cache, "kb_escaped.txt")),
          "nothing written beside the build folder")


def build_unix_sockets(tool, relu, c, tmp, cache):
    """A load_inline file whose module level connects to unix sockets beside the cache (a
    stream one, as Redis's redis.sock of kb-launch --local, and a datagram one, also through a
    datagram socketpair): Landlock does not cover them; the builder's seccomp filter
    (kb_build_modelnew.no_unix_sockets) does: compile_error, PermissionError, nothing reached
    the listeners."""
    import socket
    stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        stream.bind(os.path.join(tmp, "kb_listen.sock"))
        stream.listen(8)
        stream.setblocking(False)
        dgram.bind(os.path.join(tmp, "kb_listen_dgram.sock"))
        dgram.setblocking(False)
        rc, lines = evaluate(tool, relu, [c("relu_build_unix")], "1", cache)
        reached = []
        try:
            conn, _ = stream.accept()  # a connection made and closed still waits here
            conn.settimeout(1)
            reached.append("stream: connected, read %r" % conn.recv(64))
            conn.close()
        except BlockingIOError:
            pass
        try:
            reached.append("dgram: %r" % dgram.recv(64))
        except BlockingIOError:
            pass
    finally:
        stream.close()
        dgram.close()
    got = [(x["status"], x["reason"]) for x in lines]
    check(rc == 0 and len(got) == 1 and got[0][0] == "compile_error" and
          "PermissionError" in got[0][1],
          "the compile tier's unix socket connections refused: %s" % got)
    check(not reached, "nothing reached the unix sockets the test listens on: %s" % reached)


def sleepers():
    """Pids of `sleep 987` processes (relu_build_daemon.py's)."""
    out = []
    for name in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % name, "rb") as f:
                if f.read() == b"sleep\x00987\x00":
                    out.append(int(name))
        except (OSError, ValueError):
            pass
    return out


def build_leftovers(tool, relu, c, cache):
    """A load_inline file whose module level starts a process in a session of its own (past the
    static rules, through importlib): the builder kills it when the build ends (end_leftovers),
    whatever the verdict."""
    before = sleepers()
    rc, lines = evaluate(tool, relu, [c("relu_build_daemon")], "1", cache)
    left = [p for p in sleepers() if p not in before]
    for p in left:
        os.kill(p, 9)
    check(rc == 0 and [x["status"] for x in lines] == ["compile_error"] and not left,
          "a process started by the compile tier's run of the file does not outlive the build "
          "(%s, left %s)" % ([x["status"] for x in lines], left))


def cuda_inputs(importer, tool, tmp, cache):
    """A task file that makes its inputs on "cuda" (kernelbench_extra/18_cuda_inputs.py):
    imported for the host, its identity seed ok there (the worker makes them on the CPU)."""
    out = os.path.join(tmp, "tasks")
    src = os.path.join(HERE, "kernelbench_extra", "18_cuda_inputs.py")
    p = subprocess.run([importer, "--backend", "host", "--out", out, src],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    print(p.stdout, p.stderr)
    check(p.returncode == 0, "inputs made on cuda: imported for the host")
    task = os.path.join(out, "18_cuda_inputs")
    rc, lines = evaluate(tool, task, [os.path.join(task, "seeds", "identity.py")], "1", cache)
    got = [(x["status"], x["reason"]) for x in lines]
    check(rc == 0 and got == [("ok", "")], "inputs made on cuda: the identity ok on the host: "
          "%s" % got)


def dropout(importer, tool, tmp, c, cache):
    """A reference with a dropout in training mode (kernelbench_extra/17_dropout.py): imported
    with a warning naming the operator, "random_ops" recorded; its identity seed ok at smoke and
    full (the worker seeds torch's generator alike before every reference and ModelNew call),
    the same ReLU without the dropout wrong_output."""
    out = os.path.join(tmp, "tasks")
    src = os.path.join(HERE, "kernelbench_extra", "17_dropout.py")
    p = subprocess.run([importer, "--backend", "host", "--out", out, src],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    print(p.stdout, p.stderr)
    check(p.returncode == 0 and "warning: forward() draws random numbers (aten::bernoulli_)"
          in p.stderr, "a dropout in training mode: imported, the operator named in a warning")
    task = os.path.join(out, "17_dropout")
    try:
        with open(os.path.join(task, "kernelbench.json")) as f:
            ops = json.load(f).get("random_ops")
    except (OSError, ValueError):
        ops = None
    check(ops == ["aten::bernoulli_"], "kernelbench.json random_ops: %s" % ops)
    rc, lines = evaluate(tool, task, [os.path.join(task, "seeds", "identity.py"),
                                      c("dropout_skipped")], "1,3", cache)
    got = [(x["candidate"], x["tier"], x["status"]) for x in lines]
    check(rc == 0 and got == [("identity.py", "smoke", "ok"),
                              ("dropout_skipped.py", "smoke", "wrong_output"),
                              ("identity.py", "full", "ok"),
                              ("dropout_skipped.py", "full", "wrong_output")],
          "the identity of a random reference ok, the same without the dropout wrong: %s" % got)


def scalars(importer, tool, tmp, cache):
    """Python numbers among get_inputs() (kernelbench/14_scalar_inputs.py, whose Model refuses
    tensors): the C ABI gets 0-d tensors, a ModelNew the Python values as KernelBench passes
    them, so the identity seed ModelNew = Model is ok at smoke and full (and torch.compile, on a
    torch that has it, sees the graph the compile tier's warm-up cached)."""
    out = os.path.join(tmp, "tasks-scalars")
    p = subprocess.run([importer, "--backend", "host", "--out", out,
                        os.path.join(FILES, "14_scalar_inputs.py")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(p.stdout)
    check(p.returncode == 0, "import 14_scalar_inputs")
    task = os.path.join(out, "14_scalar_inputs")
    rc, lines = evaluate(tool, task, [os.path.join(task, "seeds", "identity.py")], "1,3", cache)
    got = [(x["tier"], x["status"], x.get("reason", "")) for x in lines]
    check(rc == 0 and [g[:2] for g in got] == [("smoke", "ok"), ("full", "ok")],
          "the identity of a task with Python scalars gets Python numbers: %s" % got)


def odd_files(importer, tool, tmp, c, cache):
    """Task files of kernelbench_extra/ that KernelBench's format allows and the importer or the
    worker once mishandled: 19_view_outputs (outputs that are a transpose, an expanded row, a
    strided slice and the input itself; the witness at full once crashed the worker reading
    the slice's bytes), 20_bom_crlf_prints (a byte order mark, CRLF, prints and a warning in
    the constructor, forward() and get_inputs(), a __main__ block; once refused as a syntax
    error, its prints once mixed into --json's stdout), 21_host_random (NumPy's generator in
    get_inputs(), Python's random in forward(); the identity was once rejected for "modified
    its inputs" and wrong_output), 23_shared_outputs (return y, y; a parameter, a buffer: the
    worker once poisoned y between copying the two), 24_f64_outputs (the comparison once
    zeroed f64 references), 25_jit_script (torch.jit.script at module level: the importer once
    could not give it the source), 26_module_draws (tensors drawn at module level, one returned
    by get_inputs(), one a CPU tensor from NumPy: the importer once stopped with a traceback in
    its real run, the identity was wrong_output and then rejected by the witness; a warning
    names the tensor get_inputs() returns every time), 27_nonfinite (NaN and infinities in the
    reference's outputs: the worker once refused to prepare it). Each imported, --json's stdout
    JSON only, its identity ok at smoke and full; the slice's other columns, an f64 sum off by
    1e-3, NaN turned into 0 and i64 results off by one (29_big_int64: once passed, float64's
    rounding) wrong_output. 31_slow_get_inputs (a 50 ms get_inputs(): the witness's calls once
    ran past its 30 s) and 32_latin1 (a file in Latin-1, declared: once refused; reference.py
    in UTF-8) and 35_many_params (700 parameters and 700 outputs: once timed out at smoke) ok
    at full. kernelbench/17_init_objects (constructor arguments a class,
    a dict, a dtype, inf; once refused by the importer) and kernelbench/18_index_tables
    (integer inputs of different bounds; once never prepared): the identity ok.
    28_all_nan (an output NaN everywhere): no verdict, the output named."""
    out = os.path.join(tmp, "tasks-odd")
    names = ["19_view_outputs", "20_bom_crlf_prints", "21_host_random", "23_shared_outputs",
             "24_f64_outputs", "25_jit_script", "26_module_draws", "27_nonfinite",
             "29_big_int64", "31_slow_get_inputs", "32_latin1", "35_many_params"]
    p = subprocess.run([importer, "--backend", "host", "--json", "--out", out] +
                       [os.path.join(HERE, "kernelbench_extra", n + ".py") for n in names],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    print(p.stdout, p.stderr)
    try:
        lines = [json.loads(x) for x in p.stdout.splitlines()]
    except ValueError:
        lines = []
    check(p.returncode == 0 and [x.get("id") for x in lines] == names and
          all(x.get("ok") for x in lines),
          "odd files imported, --json's stdout JSON Lines only: %r" % p.stdout[:300])
    check("building Model" in p.stderr and "forward (16, 64)" in p.stderr,
          "what the task file prints goes to stderr")
    check("warning: forward() draws random numbers (random (Python's generator))" in p.stderr,
          "Python's generator in forward() named in the warning")
    check("26_module_draws.py: warning: get_inputs() item 1 (mask) is the same tensor on every "
          "call (made once, at module level?)" in p.stderr,
          "a tensor get_inputs() returns every time: named in a warning")
    try:
        with open(os.path.join(out, "20_bom_crlf_prints", "reference.py"), "rb") as f:
            head = f.read(3)
        with open(os.path.join(out, "21_host_random", "kernelbench.json")) as f:
            ops = json.load(f).get("random_ops")
    except (OSError, ValueError):
        head, ops = b"", None
    check(head == b"# A", "reference.py without the byte order mark: %r" % head)
    try:
        with open(os.path.join(out, "32_latin1", "reference.py"), "rb") as f:
            latin = f.read().decode("utf-8")
    except (OSError, ValueError) as e:
        latin = str(e)
    check(latin.startswith("# -*- coding: utf-8 -*-\n") and 'NAME = "caf\u00e9"' in latin,
          "a Latin-1 file: reference.py in UTF-8, its declaration utf-8: %r" % latin[:200])
    check(ops == ["random (Python's generator)"], "21_host_random random_ops: %s" % ops)
    want = {"19_view_outputs": [("identity.py", "smoke", "ok"),
                                ("views_wrong.py", "smoke", "wrong_output"),
                                ("identity.py", "full", "ok"),
                                ("views_wrong.py", "full", "wrong_output")],
            "20_bom_crlf_prints": [("identity.py", "smoke", "ok"), ("identity.py", "full", "ok")],
            "21_host_random": [("identity.py", "smoke", "ok"), ("identity.py", "full", "ok")],
            "23_shared_outputs": [("identity.py", "smoke", "ok"),
                                  ("identity.py", "full", "ok")],
            "25_jit_script": [("identity.py", "smoke", "ok"), ("identity.py", "full", "ok")],
            "26_module_draws": [("identity.py", "smoke", "ok"),
                                ("identity.py", "full", "ok")],
            "31_slow_get_inputs": [("identity.py", "smoke", "ok"),
                                   ("identity.py", "full", "ok")],
            "32_latin1": [("identity.py", "smoke", "ok"), ("identity.py", "full", "ok")],
            "35_many_params": [("identity.py", "smoke", "ok"), ("identity.py", "full", "ok")],
            "29_big_int64": [("identity.py", "smoke", "ok"),
                             ("big_int_wrong.py", "smoke", "wrong_output"),
                             ("identity.py", "full", "ok"),
                             ("big_int_wrong.py", "full", "wrong_output")],
            "27_nonfinite": [("identity.py", "smoke", "ok"),
                             ("nonfinite_wrong.py", "smoke", "wrong_output"),
                             ("identity.py", "full", "ok"),
                             ("nonfinite_wrong.py", "full", "wrong_output")],
            "24_f64_outputs": [("identity.py", "smoke", "ok"),
                               ("f64_wrong.py", "smoke", "wrong_output"),
                               ("identity.py", "full", "ok"),
                               ("f64_wrong.py", "full", "wrong_output")]}
    for n in names:
        task = os.path.join(out, n)
        cands = [os.path.join(task, "seeds", "identity.py")]
        if n == "19_view_outputs":
            cands.append(c("views_wrong"))
        if n == "24_f64_outputs":
            cands.append(c("f64_wrong"))
        if n == "27_nonfinite":
            cands.append(c("nonfinite_wrong"))
        if n == "29_big_int64":
            cands.append(c("big_int_wrong"))
        rc, lines = evaluate(tool, task, cands, "1,3", cache)
        got = [(x["candidate"], x["tier"], x["status"]) for x in lines]
        check(rc == 0 and got == want[n], "%s: %s (want %s; %s)"
              % (n, got, want[n], [x.get("reason", "")[:200] for x in lines]))
        if n == "29_big_int64" and len(lines) > 1:
            m = re.match(r'output "out" of input set 0: element 0 is (\d+), expected (\d+) '
                         r'\(64 of 64 bad\)', lines[1]["reason"])
            check(m is not None and int(m.group(1)) == int(m.group(2)) + 1,
                  "i64 off by one: both values exact: %s" % lines[1]["reason"])
    # constructor arguments that are not JSON (a class, a dict, a dtype, inf); integer inputs
    # of different bounds: each imported, the identity ok
    for n in ("17_init_objects", "18_index_tables"):
        p = subprocess.run([importer, "--backend", "host", "--out", out,
                            os.path.join(FILES, n + ".py")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        task = os.path.join(out, n)
        rc, lines = evaluate(tool, task, [os.path.join(task, "seeds", "identity.py")], "1",
                             cache)
        check(p.returncode == 0 and rc == 0 and [x["status"] for x in lines] == ["ok"],
              "%s: imported, the identity ok: %s %s"
              % (n, p.stderr[-300:], [x.get("reason") for x in lines]))
    # an output NaN in every element: the worker refuses to prepare it, naming the output
    src = os.path.join(HERE, "kernelbench_extra", "28_all_nan.py")
    p = subprocess.run([importer, "--backend", "host", "--out", out, src],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    task = os.path.join(out, "28_all_nan")
    err = []
    rc, lines = evaluate(tool, task, [os.path.join(task, "seeds", "identity.py")], "1", cache,
                         err=err)
    check(p.returncode == 0 and rc == 1 and not lines and 'the oracle\'s output "out1" of input '
          'set 0 is NaN in every element: there is nothing to check a candidate against'
          in err[0], "an output NaN everywhere: not prepared, named: %s" % err[0][-300:])


def impure_references(importer, tool, tmp, cache):
    """References that are not a function of their inputs: the worker refuses to prepare the
    task, naming what differs (each was once prepared, and every candidate, the identity
    included, rejected as "not deterministic" or for "modified its inputs")."""
    out = os.path.join(tmp, "tasks-impure")
    # references that are not a function of their inputs: the worker refuses to prepare the
    # task, naming what differs (each once prepared, and every candidate, the identity
    # included, rejected): noise from a torch.Generator the module holds (the importer warns
    # that no candidate can match), a call counter in a buffer (warned about) or in a plain
    # Python attribute (nothing the importer sees), BatchNorm's running statistics read back in
    # eval mode
    not_det = ("the sandbox cannot prepare it: the reference is not deterministic: element 0 of "
               "output \"out\" is ")
    warns = {"30_own_generator": "warning: forward() draws random numbers (aten::randn) from a "
                                 "torch.Generator of its own",
             "22_buffer_counter": "warning: forward() changes the module's buffer \"calls\" in "
                                  "place"}
    for n in ("30_own_generator", "22_buffer_counter", "36_call_counter", "37_running_stats"):
        src = os.path.join(HERE, "kernelbench_extra", n + ".py")
        p = subprocess.run([importer, "--backend", "host", "--out", out, src],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        print(p.stdout, p.stderr)
        check(p.returncode == 0 and warns.get(n, "") in p.stderr,
              "%s: imported%s" % (n, ", with its warning" if n in warns else ""))
        task = os.path.join(out, n)
        err = []
        rc, lines = evaluate(tool, task, [os.path.join(task, "seeds", "identity.py")], "1",
                             cache, err=err)
        check(rc == 1 and not lines and not_det in err[0] and "on a first call on input set 0 "
              "and " in err[0] and "differ beyond the tolerance): state kept between calls?"
              in err[0],
              "%s: not prepared, the reference named not deterministic: %s"
              % (n, [x.get("reason") for x in lines] or err[0][-400:]))
    # a result cached on the first call and used for every later input: not prepared, the set
    # named (an honest candidate was once wrong_output, the identity ok)
    src = os.path.join(HERE, "kernelbench_extra", "38_cached_scale.py")
    p = subprocess.run([importer, "--backend", "host", "--out", out, src],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    task = os.path.join(out, "38_cached_scale")
    err = []
    rc, lines = evaluate(tool, task, [os.path.join(task, "seeds", "identity.py")], "2", cache,
                         err=err)
    check(p.returncode == 0 and rc == 1 and not lines and "the sandbox cannot prepare it: the "
          "reference depends on earlier calls: element 0 of output \"out\" of input set 2 is "
          in err[0] and "state kept between calls (a cache)?" in err[0],
          "38_cached_scale: not prepared, the stale set named: %s"
          % ([x.get("reason") for x in lines] or err[0][-400:]))
    # get_inputs() drawing from a generator the worker does not seed: not prepared, the input
    # named (every candidate was once rejected for "modified its inputs")
    src = os.path.join(HERE, "kernelbench_extra", "40_unseeded_inputs.py")
    p = subprocess.run([importer, "--backend", "host", "--out", out, src],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    task = os.path.join(out, "40_unseeded_inputs")
    err = []
    rc, lines = evaluate(tool, task, [os.path.join(task, "seeds", "identity.py")], "1", cache,
                         err=err)
    check(p.returncode == 0 and rc == 1 and not lines and "the sandbox cannot prepare it: "
          "get_inputs() gives input \"x\" (inputs[0]) other values on a second draw under the "
          "same seed" in err[0],
          "40_unseeded_inputs: not prepared, the input named: %s"
          % ([x.get("reason") for x in lines] or err[0][-400:]))
    # a hand-written bundle whose reference edits its input in place (the importer refuses such
    # a file; a bundle written by hand meets only the worker): not prepared, the input named
    edits = os.path.join(out, "relu_edits_ref")
    os.makedirs(os.path.join(edits, "seeds"))
    with open(os.path.join(edits, "reference.py"), "w") as f:
        f.write("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
                "    def forward(self, x):\n        return torch.relu_(x)\n\n\n"
                "def get_inputs():\n    return [torch.randn(16, 64)]\n\n\n"
                "def get_init_inputs():\n    return []\n")
    with open(os.path.join(edits, "task.json"), "w") as f:
        json.dump({"schema": "kernelbrain.task/1", "id": "relu_edits_ref", "name": "relu",
                   "backend": "host", "oracle": {"kind": "pytorch", "source": "reference.py"},
                   "inputs": [{"name": "x", "dtype": "f32", "shape": [16, 64]}],
                   "outputs": [{"name": "out", "dtype": "f32", "shape": [16, 64]}],
                   "input_sets": [{"seed": 1, "distribution": "normal", "low": 0, "high": 1}],
                   "seeds": [{"name": "identity", "source": "seeds/identity.py"}],
                   "baseline": "identity"}, f)
    with open(os.path.join(edits, "seeds", "identity.py"), "w") as f:
        f.write(open(os.path.join(edits, "reference.py")).read() + "\nModelNew = Model\n")
    err = []
    rc, lines = evaluate(tool, edits, [os.path.join(edits, "seeds", "identity.py")], "1", cache,
                         err=err)
    check(rc == 1 and not lines and "the sandbox cannot prepare it: the reference changes its "
          "input \"x\" (inputs[0]) in place" in err[0],
          "a reference editing its input: not prepared, the input named: %s"
          % ([x.get("reason") for x in lines] or err[0][-400:]))


def out_buffers(importer, tool, tmp, c, relu, cache):
    """Outputs written into a buffer allocated once and returned on every call: a reference doing
    so (kernelbench_extra/39_out_buffer.py) with an honest candidate, and a ReLU candidate doing
    so on 1_relu: each ok at the full tier. On the host the witness's calls kept views of the
    buffer, not copies, so every call read as the last: both were rejected."""
    out = os.path.join(tmp, "tasks-outbuf")
    src = os.path.join(HERE, "kernelbench_extra", "39_out_buffer.py")
    p = subprocess.run([importer, "--backend", "host", "--out", out, src],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    task = os.path.join(out, "39_out_buffer")
    rc, lines = evaluate(tool, task, [os.path.join(task, "seeds", "identity.py"),
                                      c("out_buffer_honest")], "3", cache)
    check(p.returncode == 0 and rc == 0 and [x["status"] for x in lines] == ["ok", "ok"],
          "39_out_buffer: the identity and an honest candidate ok at full: %s"
          % [(x["status"], x.get("reason")) for x in lines])
    rc, lines = evaluate(tool, relu, [c("relu_out_buffer")], "3", cache)
    check(rc == 0 and [x["status"] for x in lines] == ["ok"],
          "1_relu: a ReLU writing into its own reused buffer ok at full: %s"
          % [(x["status"], x.get("reason")) for x in lines])


def sampled_witness(importer, tool, tmp, c, cache):
    """kernelbench_extra/41_large_relu (an output of 22.5 MB a call, over a third of the
    witness's 64 MiB a request: the witness compares 2^20 positions of each call's): its
    identity ok at full; large_relu_witness_sample.py, which wraps the worker's
    witness_positions to learn the positions from the runner's seed and computes only those in
    the witness's calls, rejected by the witness (ok before the positions were drawn after each
    call, 2026-12-07)."""
    out = os.path.join(tmp, "tasks-sampled")
    src = os.path.join(HERE, "kernelbench_extra", "41_large_relu.py")
    p = subprocess.run([importer, "--backend", "host", "--out", out, src],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    check(p.returncode == 0, "import 41_large_relu: %s" % p.stdout[-300:])
    task = os.path.join(out, "41_large_relu")
    rc, lines = evaluate(tool, task, [os.path.join(task, "seeds", "identity.py"),
                                      c("large_relu_witness_sample")], "3", cache)
    got = [(x["status"], x.get("reason", "")) for x in lines]
    check(rc == 0 and [g[0] for g in got] == ["ok", "rejected"] and
          got[1][1].startswith("wrong on inputs drawn after the runner asked, read outside its "
                               "process: output \"out\" of witness call 1 of "),
          "41_large_relu at full (sampled witness outputs): the identity ok, the file that "
          "computes only the positions drawn from the seed rejected: %s" % got)


def main(argv):
    importer, tool, cands = argv[1:4]
    worker_dir = os.path.dirname(tool)
    if not os.path.isfile(os.path.join(worker_dir, "libkb-confine.so")):
        print("note: no libkb-confine.so next to the worker: it runs unconfined here")
        os.environ["KB_CONFINE_OPTIONAL"] = "1"
    tmp = tempfile.mkdtemp(prefix="kb-modelnew.")
    try:
        out = os.path.join(tmp, "tasks")
        names = ["1_relu", "12_small_linear"]
        p = subprocess.run([importer, "--backend", "host", "--out", out] +
                           [os.path.join(FILES, n + ".py") for n in names],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(p.stdout)
        check(p.returncode == 0, "import %s" % ", ".join(names))
        cache = os.path.join(tmp, "cache")
        c = lambda n: os.path.join(cands, n + ".py")  # noqa: E731
        relu = os.path.join(out, "1_relu")
        relu_smoke(tool, relu, c, cache)
        tampering(tool, relu, c, cache)
        leaks(tool, relu, c, cache)
        build_confined(tool, relu, c, cache)
        build_leftovers(tool, relu, c, cache)
        build_unix_sockets(tool, relu, c, tmp, cache)

        reference_tampering(tool, os.path.join(out, "12_small_linear"), c, cache)
        rc, lines = evaluate(tool, os.path.join(out, "12_small_linear"),
                             [c("linear_torch"), c("linear_ctor")], "1", cache)
        got = [(x["status"], x["reason"]) for x in lines]
        check(rc == 0 and [s for s, _ in got] == ["ok", "compile_error"],
              "12_small_linear: own parameters under the task's seed ok; another constructor "
              "compile_error: %s" % got)
        if len(got) == 2:
            check("ModelNew(*get_init_inputs()) raised TypeError" in got[1][1] and
                  "constructor arguments" in got[1][1], "the constructor is named")

        # a task with a C oracle cannot run a ModelNew: a clear verdict, nothing built
        host_task = os.path.join(HERE, "..", "..", "tasks", "host", "gelu")
        rc, lines = evaluate(tool, host_task, [c("relu_torch")], "1", cache)
        check(rc == 0 and [x["status"] for x in lines] == ["compile_error"] and
              "runs only on a task with a pytorch oracle" in lines[0]["reason"],
              "a ModelNew on a C-oracle task: compile_error, named: %s" % lines)

        err = []
        rc, lines = evaluate(tool, relu, [c("relu_identity")], "3", cache,
                             dict(os.environ, KB_LOG="debug"), err)
        x = lines[0] if lines else {}
        # the same-run baseline (the task's identity seed) sampled one-for-one with the
        # candidate, interleaved (docs/sandbox.md), its ratio a harness check as eager's
        m = re.search(r"same-run baseline's samples [\d.]+ s \((\d+) samples, interleaved "
                      r"with the candidate's (\d+)\)", err[0] if err else "")
        check(m is not None and int(m.group(1)) == int(m.group(2)) > 0,
              "the same-run baseline interleaved: as many samples as the candidate (%s)"
              % (m.groups() if m else "no debug line",))
        srs = x.get("same_run_speedup")
        check(isinstance(srs, float) and IDENTITY_RANGE[0] <= srs <= IDENTITY_RANGE[1],
              "the identity against its same-run baseline: %sx" % srs)
        eager = x.get("torch_eager_us")
        ratio = x["median_us"] / eager if x.get("median_us") and eager else 0.0
        print("identity: %s us, torch eager %s us: %.3fx" % (x.get("median_us"), eager, ratio))
        check(rc == 0 and x.get("status") == "ok" and x.get("samples", 0) > 0,
              "the identity ModelNew = Model at full: ok and timed")
        check(IDENTITY_RANGE[0] <= ratio <= IDENTITY_RANGE[1],
              "the identity times as torch eager: %.3fx" % ratio)

        dropout(importer, tool, tmp, c, cache)
        scalars(importer, tool, tmp, cache)
        cuda_inputs(importer, tool, tmp, cache)
        odd_files(importer, tool, tmp, c, cache)
        impure_references(importer, tool, tmp, cache)
        out_buffers(importer, tool, tmp, c, relu, cache)
        sampled_witness(importer, tool, tmp, c, cache)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
