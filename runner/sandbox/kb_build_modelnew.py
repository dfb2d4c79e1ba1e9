"""kb_build_modelnew.py: the compile tier of a KernelBench-format candidate (class ModelNew).

usage: python3 -I kb_build_modelnew.py --source FILE --oracle FILE --out DIR --backend host|cuda
       python3 -I kb_build_modelnew.py --reference --oracle FILE --out DIR --backend host|cuda

The runner (runner/compile_kb.c) runs it as it runs nvcc: posix_spawn, a scrubbed environment
(PATH, LD_LIBRARY_PATH, HOME, LC_ALL=C, and TMPDIR, TORCH_EXTENSIONS_DIR, TRITON_CACHE_DIR,
TORCHINDUCTOR_CACHE_DIR all inside DIR), DIR a fresh build folder of the content-addressed
cache, a time limit, its output captured as the build log. It

1. checks the static rules (docs/sandbox.md "KernelBench-format candidates"): the file parses,
   defines ModelNew at module level, imports none of the modules that start processes or open
   sockets, and is labelled "kernel" (load_inline/load of torch.utils.cpp_extension or Triton),
   "torch_compile" (torch.compile, no custom kernel) or "torch_only" (plain torch);
2. runs the file as its own module with torch.utils.cpp_extension.load_inline and load
   wrapped, so every extension it builds (nvcc/c++ and ninja run here, never in the confined
   worker) is recorded with the SHA-256 of the call's arguments;
3. instantiates ModelNew(*get_init_inputs()) of the task's oracle on the CPU under
   torch.manual_seed(0), as the worker will on the device (a different constructor is caught
   here); on the cuda backend, when a GPU is visible and the file uses torch.compile or
   Triton, it also runs one forward pass on the device on get_inputs(), so that the JIT
   compilers fill their caches in DIR (turns at the device per cache folder, an flock: shared
   among passes over small inputs, exclusive for a large one; class gpu_turn).
   Steps 2 and 3 run only for a "kernel" file or on the cuda backend: a plain-torch file on the
   host has nothing to build, so none of its code runs outside the confined worker;
4. writes DIR/candidate.py (the source) and DIR/build.json:
   {"status": "ok", "label": ..., "extensions": [{"name", "key", "path" (relative to DIR)}],
   "jit": true when the file uses torch.compile or Triton (the worker then readies their
   compilers' caches and tool probes before it confines itself), "jit_dir": the folder of
   TRITON_CACHE_DIR and TORCHINDUCTOR_CACHE_DIR (the runner's `<key>.jit`, outside DIR: it
   keeps its path, which inductor writes into what it caches)}.

With --reference there is no candidate: the task's own module (Model of the oracle file, task
code the runner trusts) is compiled with torch.compile and run twice as the trusted worker runs
it (kb_sandbox_torch.time_torch: built under torch.manual_seed(MODEL_SEED), training mode, strict
f32, no_grad, inductor's own compile threads), so that Triton's and inductor's caches in the
runner's reference folder (TRITON_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR: `<cache>/reference.jit`,
which the trusted worker's caches point at, never a candidate's) hold its compilation before the
full tier times torch.compile: the compile pool does it on the CPUs beside the evaluations,
while the device would otherwise wait for it (docs/sandbox.md, "torch.compile compiled ahead").
DIR/build.json: {"status": "ok", "label": "reference", "warmed": true or false, "reason" when
false (no torch.compile, no device, the pass failed: the trusted worker then compiles it
itself, as before)}.

A candidate that fails a rule or a step is {"status": "compile_error" or "rejected",
"reason"} in DIR/build.json, exit status 0 (a verdict); {"status": "infra_error", "reason"}
when the warm-up pass ran out of device memory twice (no verdict: the runner does not cache
it); exit 2 is a bad command line. The
worker (kb_sandbox_torch.py) loads the built extensions from DIR without running any compiler.
"""
import ast
import fcntl
import hashlib
import json
import os
import signal
import sys
import time
import traceback

EXIT_USAGE = 2
EXIT_TERMINATED = 3  # SIGTERM: the runner's time limit or cancel (end_leftovers ran)
MODEL_SEED = 0
# modules whose use would start processes, open sockets or load arbitrary libraries; the
# confined worker traps them anyway, this process is not confined
FORBIDDEN_MODULES = ("subprocess", "multiprocessing", "socket", "ctypes", "pty", "shutil",
                     "urllib", "http", "requests", "signal", "resource")
FORBIDDEN_CALLS = ("os.system", "os.popen", "os.fork", "os.forkpty", "os.kill", "os.execv",
                   "os.execve", "os.execvp", "os.spawnv", "os.posix_spawn", "os.remove",
                   "os.unlink", "os.rmdir", "os.rename", "eval", "exec", "__import__")


def dotted(node):
    """'a.b.c' for a Name/Attribute chain, else ''."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def import_aliases(tree):
    """Each name an import binds, to the dotted name it stands for: `import torch as kt` ->
    {"kt": "torch"}, `from os import system as run` -> {"run": "os.system"}; so that the rules
    below see through aliases (a torch.compile seed imports torch under another name)."""
    alias = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    alias[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    alias[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                alias[a.asname or a.name] = node.module + "." + a.name
    return alias


def resolve(name, alias):
    """`name` ("kt.compile") with its first part replaced by what the import bound it to."""
    head, _, rest = name.partition(".")
    if head in alias:
        return alias[head] + ("." + rest if rest else "")
    return name


def static_rules(source, path):
    """(status, reason, label): status "ok", "compile_error" or "rejected"."""
    try:
        tree = ast.parse(source, path)
    except SyntaxError as e:
        return "compile_error", "syntax error at line %s: %s" % (e.lineno, e.msg), ""
    has_model_new = False
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            has_model_new = True
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "ModelNew" for t in targets):
                has_model_new = True
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.asname or a.name for a in node.names]
            if "ModelNew" in names:
                has_model_new = True
    if not has_model_new:
        return ("compile_error", "no ModelNew: a KernelBench solution defines class "
                "ModelNew(nn.Module) at module level", "")
    kernel = triton = compiled = False
    cpp_ext_names = set()
    alias = import_aliases(tree)
    for node in ast.walk(tree):
        mods = []
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            mods = [node.module]
            if node.module == "torch.utils.cpp_extension":
                cpp_ext_names.update(a.asname or a.name for a in node.names)
        for m in mods:
            top = m.split(".")[0]
            if top in FORBIDDEN_MODULES:
                return ("rejected", "static rule: line %d imports %s (a solution may not start "
                        "processes, open sockets or load libraries itself)" % (node.lineno, m),
                        "")
            if top == "triton":
                triton = True
        if isinstance(node, (ast.Attribute, ast.Name)):
            # any use, not only a call: `run = os.system; run(...)`, `@torch.compile`
            written = dotted(node)
            name = resolve(written, alias)
            if name in FORBIDDEN_CALLS:
                return ("rejected", "static rule: line %d uses %s%s" % (
                    node.lineno, name, "" if written == name else " (as %s)" % written), "")
            if name == "torch.compile":
                compiled = True
        if isinstance(node, ast.Call):
            name = resolve(dotted(node.func), alias)
            last = name.split(".")[-1]
            if (last == "load_inline" or name.endswith("cpp_extension.load")
                    or (last == "load" and "load" in cpp_ext_names)):
                kernel = True
    label = "kernel" if kernel or triton else ("torch_compile" if compiled else "torch_only")
    return "ok", "", label


def call_key(args, kwargs):
    """The SHA-256 of a load_inline/load call's arguments: the worker finds the built extension
    of its own call by it."""
    text = repr((tuple(args), sorted(kwargs.items())))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def wrap_builders(out_dir, record):
    import torch.utils.cpp_extension as ext

    def wrap(fn, kind):
        def built(*args, **kwargs):
            name = kwargs.get("name", args[0] if args else "")
            try:
                mod = fn(*args, **kwargs)
            except Exception as e:
                print(str(e), file=sys.stderr)  # torch puts the compiler's output in it
                raise ExtensionError("extension \"%s\" does not build: %s" % (
                    name, first_error(str(e))))
            path = getattr(mod, "__file__", None)
            if not path:
                raise RuntimeError("%s built no python module (is_python_module=False is not "
                                   "supported)" % kind)
            record.append({"name": str(name), "kind": kind, "key": call_key(args, kwargs),
                           "path": os.path.relpath(os.path.abspath(path), out_dir)})
            return mod
        return built
    ext.load_inline = wrap(ext.load_inline, "load_inline")
    ext.load = wrap(ext.load, "load")


def run_file(path, source, name):
    """The file run as a module, with the generators seeded as the PyTorch worker seeds them
    before it runs a task file or a ModelNew file (kb_sandbox_torch.exec_reference): a tensor
    drawn at module level has the same values here, in the worker and in the reference."""
    import random
    import torch
    torch.manual_seed(MODEL_SEED)
    random.seed(MODEL_SEED)
    np = sys.modules.get("numpy")  # torch imports NumPy where it is installed
    if np is not None:
        np.random.seed(MODEL_SEED)
    ns = {"__name__": name, "__file__": path}
    exec(compile(source, path, "exec"), ns)
    return ns


def build(args):
    out_dir = os.path.abspath(args["out"])
    with open(args["source"], encoding="utf-8") as f:
        source = f.read()
    status, reason, label = static_rules(source, "candidate.py")
    if status != "ok":
        return {"status": status, "reason": reason}
    cand_path = os.path.join(out_dir, "candidate.py")
    with open(cand_path, "w", encoding="utf-8") as f:
        f.write(source)
    if label != "kernel" and args["backend"] != "cuda":
        # nothing to build: the file runs first in the confined worker, which checks ModelNew
        # and its constructor there (and no candidate code runs unconfined)
        return {"status": "ok", "label": label, "extensions": []}
    import torch
    record = []
    wrap_builders(out_dir, record)
    # its lock file is outside the folders the file may write: opened before confinement
    turn = gpu_turn(out_dir) if args["backend"] == "cuda" else None
    writable = [out_dir, "/dev"] + [os.environ[v] for v in ("TMPDIR",) if os.environ.get(v)]
    if os.environ.get("TRITON_CACHE_DIR"):  # the runner's JIT folder of this key (below)
        writable.append(os.path.dirname(os.path.abspath(os.environ["TRITON_CACHE_DIR"])))
    why = confine_writes(writable)
    print("confinement: %s" % (why or "Landlock, writes to %s only" % ", ".join(writable)),
          file=sys.stderr)
    if args["backend"] == "cuda":
        # the driver's start (cuInit) probes the MPS daemon's unix socket: made here, before
        # the filter below, whose EACCES it was never tested against
        torch.cuda.is_available()
    why = no_unix_sockets()
    if why:
        return {"status": "infra_error", "reason": "the file's code is not run: %s" % why}
    print("confinement: seccomp, no unix socket of its own (socket(AF_UNIX) EACCES)",
          file=sys.stderr)
    adopt_orphans()
    try:
        ns = run_file(cand_path, source, "kb_candidate")
    except ExtensionError as e:
        return {"status": "compile_error", "reason": str(e)}
    except SystemExit as e:  # not this builder's own exit status (2 is a bad command line)
        return {"status": "compile_error", "reason": "running the file called sys.exit(%r)"
                % (e.code,)}
    except Exception as e:
        print(traceback.format_exc(limit=-3), file=sys.stderr)
        return {"status": "compile_error", "reason": "running the file failed: %s: %s" % (
            type(e).__name__, first_line(e))}
    model_new = ns.get("ModelNew")
    if not isinstance(model_new, type) or not issubclass(model_new, torch.nn.Module):
        return {"status": "compile_error", "reason": "ModelNew is %s, not a torch.nn.Module "
                "class" % type(model_new).__name__}
    try:
        with open(args["oracle"], encoding="utf-8") as f:
            oracle = run_file(args["oracle"], f.read(), "kb_reference")
        init = oracle["get_init_inputs"]()
    except Exception as e:
        return {"status": "infra_error", "reason": "the oracle's get_init_inputs() failed: "
                "%s: %s" % (type(e).__name__, first_line(e))}
    torch.manual_seed(MODEL_SEED)
    try:
        module = model_new(*init)
    except (Exception, SystemExit) as e:
        return {"status": "compile_error", "reason": "ModelNew(*get_init_inputs()) raised %s: %s "
                "(ModelNew takes the constructor arguments of the task's Model)"
                % (type(e).__name__, first_line(e))}
    jit = needs_warmup(label, source)
    if args["backend"] == "cuda" and torch.cuda.is_available() and jit:
        failed = warm_up_turns(torch, module, oracle, turn)
        if failed is not None:
            return failed
    result = {"status": "ok", "label": label, "extensions": record, "jit": jit}
    if jit and os.environ.get("TRITON_CACHE_DIR"):
        # the runner's folder of this key's JIT caches (it keeps its path: inductor writes
        # absolute paths of its cache into what it caches); the worker points its caches there
        result["jit_dir"] = os.path.dirname(os.path.abspath(os.environ["TRITON_CACHE_DIR"]))
    return result


# The largest share of device memory a reference's inputs and parameters may take to be
# compiled ahead: over SHARED_FRACTION its pass waits for a turn alone at the device. At 1/128
# alone, six of the built-in suite's 13 tasks (1 GiB of inputs) were not compiled ahead on an
# H100 at d0cedf0, and the trusted worker compiled softmax, layernorm and scan itself for 3.6-5.3 s
# each (0.25-1.4 s for the tasks compiled ahead).
REFERENCE_FRACTION = 1 / 32


def reference(args):
    """--reference: torch.compile of the task's own module run as the trusted worker runs it,
    its caches in the runner's reference folder (the module docstring). Never a verdict on
    anything: "warmed" false with the reason when it could not (the trusted worker then
    compiles the module itself)."""
    def skipped(why):
        print("reference not warmed: %s" % why, file=sys.stderr)
        return {"status": "ok", "label": "reference", "warmed": False, "reason": why[:255]}
    if args["backend"] != "cuda":
        return skipped("the host backend (compiled ahead on CUDA only)")
    import torch
    if not hasattr(torch, "compile"):
        return skipped("no torch.compile in torch %s" % torch.__version__)
    if not torch.cuda.is_available():
        return skipped("no CUDA device visible")
    if not os.environ.get("TRITON_CACHE_DIR") or not os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        return skipped("TRITON_CACHE_DIR and TORCHINDUCTOR_CACHE_DIR not set")
    out_dir = os.path.abspath(args["out"])
    turn = gpu_turn(out_dir)
    try:
        with open(args["oracle"], encoding="utf-8") as f:
            oracle = run_file(args["oracle"], f.read(), "kb_reference")
        torch.manual_seed(MODEL_SEED)
        module = oracle["Model"](*oracle["get_init_inputs"]())
    except Exception as e:
        return skipped("Model(*get_init_inputs()) raised %s: %s" % (type(e).__name__,
                                                                   first_line(e)))
    size = turn.size(torch, module, oracle)
    if size is None or size > turn.device * REFERENCE_FRACTION:
        # larger tasks are few operators on large tensors, quick to compile, and their pass
        # would take memory the runner's workers hold for them (KernelBench level 1's 6-8 GiB)
        return skipped("inputs and parameters %s, over 1/%d of the device's memory"
                       % ("unknown" if size is None else "%.0f MiB" % (size / 2**20),
                          round(1 / REFERENCE_FRACTION)))
    failed = warm_up_turns(torch, torch.compile(module), oracle, turn, one_thread=False)
    if failed is not None:
        return skipped(failed["reason"])
    return {"status": "ok", "label": "reference", "warmed": True}


def needs_warmup(label, source):
    """A forward pass on the device fills only the caches of JIT compilers: torch.compile's
    (inductor) and Triton's. A plain-torch file or a load_inline extension (built when the file
    runs) has none, and its pass would only take device memory from the runner's workers."""
    return label == "torch_compile" or "triton" in source


class gpu_turn:
    """Turns at the device for warm-ups on a node: the compile tier runs several builds at once,
    and each pass holds a task's inputs in device memory (6 GiB and more for KernelBench level
    1), which together with the runner's workers ran the H200 out of memory. An flock on a file
    in the cache folder (the build folder's parent), released when the pass ends or the process
    dies: shared for a pass whose inputs and parameters take at most SHARED_FRACTION of the
    device's memory (such passes run side by side: most of their time is the JIT compilers' on
    the CPU), exclusive for a larger one (it runs alone). The runner takes the same lock, by
    its file name, exclusively while it retries an evaluation that ran out of device memory
    (runner/warmup_hold.c): a pass then waits for its turn."""

    SHARED_FRACTION = 1 / 128  # 1.1 GiB of an H200; 15 such passes at once stay under a fifth

    def __init__(self, out_dir):
        """Opens (creates) the lock file now, before the process is confined to its folders."""
        self.path = os.path.join(os.path.dirname(os.path.abspath(out_dir)), ".gpu-warmup.lock")
        self.shared = False
        self.device = 0  # its memory in bytes, once size() read it
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as e:  # no lock, no turn-taking: the pass still runs
            print("warm-up lock %s: %s" % (self.path, e), file=sys.stderr)
            self.fd = -1

    def size(self, torch, module, oracle):
        """Decides the kind of turn from the bytes of get_inputs() (drawn on the meta device:
        shapes only) and of the module's parameters and buffers; exclusive when they cannot be
        known. Returns the bytes (None when unknown)."""
        try:
            with torch.device("meta"):
                ins = oracle["get_inputs"]()
            total = sum(t.numel() * t.element_size() for t in ins
                        if isinstance(t, torch.Tensor))
            total += sum(t.numel() * t.element_size()
                         for t in list(module.parameters()) + list(module.buffers()))
            device = torch.cuda.get_device_properties(0).total_memory
        except Exception as e:  # a get_inputs() the meta device cannot run: a turn alone
            print("warm-up size unknown (%s: %s): an exclusive turn"
                  % (type(e).__name__, first_line(e)), file=sys.stderr)
            return None
        self.device = device
        self.shared = total <= device * self.SHARED_FRACTION
        return total

    def __enter__(self):
        try:
            if self.fd >= 0:
                fcntl.flock(self.fd, fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX)
        except OSError as e:
            print("warm-up lock %s: %s" % (self.path, e), file=sys.stderr)
        return self

    def __exit__(self, *exc):
        """Ends the turn; the lock file stays open for the next one (a retry's turn alone: the
        file closed here once made that retry fail with EBADF, H200 run of 990ec48)."""
        if self.fd >= 0:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            except OSError as e:
                print("warm-up lock %s: %s" % (self.path, e), file=sys.stderr)
        return False


def warm_up(torch, module, oracle, one_thread=True):
    """Two forward passes on the device under the worker's numerics, so that the JIT compilers
    fill their caches in the build folder. `one_thread`: inductor compiles in this process, as
    the confined worker does (its caches' entries are the confined worker's); False for the
    reference, which the trusted worker compiles with inductor's own threads. Returns None, or
    the exception of a failed pass (logged)."""
    # strict f32 as in the worker (kb_sandbox_torch.strict_f32): inductor's choices depend on it
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    try:
        import torch._inductor.config as config
        if one_thread:
            config.compile_threads = 1  # as in the confined worker (kb_sandbox_torch.jit_imports)
    except Exception:
        pass
    try:
        module = module.cuda()
        torch.manual_seed(MODEL_SEED)
        libcuda_path()
        # two passes on two draws: a module whose state changes on its first call (a recurrent
        # net's hidden state) is recompiled on its second, which the worker must find cached
        for _ in range(2):
            with torch.device("cuda"):  # drawn there as the worker draws them (not on the CPU)
                ins = oracle["get_inputs"]()
            ins = [t.cuda().contiguous() if isinstance(t, torch.Tensor) else t for t in ins]
            with torch.no_grad():
                module(*ins)
        torch.cuda.synchronize()
        return None
    except Exception as e:
        print("warm-up forward pass failed: %s: %s" % (type(e).__name__, first_line(e)),
              file=sys.stderr)
        return e
    finally:
        module = ins = None
        torch.cuda.empty_cache()


def warm_up_turns(torch, module, oracle, turn, one_thread=True):
    """The warm-up pass in its turn at the device; out of device memory, once more in a turn
    alone (the runner's workers drop prepared tasks and other passes end in between). Returns
    None, or the build's verdict when the pass failed: "infra_error" when the device ran out
    of memory both times (not the candidate's failure: the runner neither caches it nor blames
    the file), "compile_error" naming the exception otherwise (the worker, whose JIT caches the
    pass did not fill, could not compile the file confined; measured on the H200: a level-1
    compile seed whose pass ran out of memory was then "compile_error: PermissionError" or
    "rejected: ptxas --version" in the worker)."""
    size = turn.size(torch, module, oracle)
    for attempt in (0, 1):
        t0 = time.monotonic()
        with turn:
            if attempt:
                room_for(torch, size)
            waited = time.monotonic() - t0
            failed = warm_up(torch, module, oracle, one_thread)
        print("warm-up: %s turn (inputs and parameters %s), waited %.1f s for it, pass %.1f s%s"
              % ("shared" if turn.shared else "exclusive",
                 "unknown" if size is None else "%.0f MiB" % (size / 2**20), waited,
                 time.monotonic() - t0 - waited, ", failed" if failed else ""), file=sys.stderr)
        if failed is None:
            return None
        oom = getattr(torch.cuda, "OutOfMemoryError", ())
        if not (isinstance(failed, oom) or "out of memory" in str(failed)):
            return {"status": "compile_error", "reason": "the compile tier's forward pass on "
                    "get_inputs() (which fills the JIT caches) raised %s: %s"
                    % (type(failed).__name__, first_line(failed))}
        turn.shared = False
    return {"status": "infra_error", "reason": "the compile tier's forward pass ran out of device "
            "memory twice (%s); the JIT caches are not filled" % first_line(failed)[:120]}


ROOM_WAIT_S = 120  # of the build's 600 s (runner/compile_kb.c): a retry waits this long at most


def room_for(torch, size):
    """Before a retry of a pass that ran out of device memory (in its turn alone): waits until
    the device has three times its inputs and parameters free (its inputs, outputs and what the
    compiled code allocates between), at most ROOM_WAIT_S: the runner's workers give memory back
    as they drop tasks (measured on the H200: a retry one second after the failure found 2-8 GiB
    free of 140 and failed again)."""
    need = 3 * (size if size is not None else 0) + (512 << 20)
    t0 = time.monotonic()
    free = 0
    while time.monotonic() - t0 < ROOM_WAIT_S:
        try:
            free = torch.cuda.mem_get_info(0)[0]
        except Exception:
            return
        if free >= need:
            break
        time.sleep(0.5)
    print("warm-up retry: %.1f GiB free after %.1f s (wanted %.1f GiB)"
          % (free / 2**30, time.monotonic() - t0, need / 2**30), file=sys.stderr)


def libcuda_path():
    """TRITON_LIBCUDA_PATH as the confined worker sets it (kb_sandbox_torch.libcuda_path, loaded
    from this script's folder), so the builder and the worker run Triton in one environment."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kb_sandbox_torch.py")
    try:
        spec = importlib.util.spec_from_file_location("kb_sandbox_torch", path)
        worker = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(worker)
        worker.libcuda_path()
    except Exception as e:  # Triton then finds libcuda itself
        print("TRITON_LIBCUDA_PATH not set: %s" % first_line(e), file=sys.stderr)


# ---- confinement of the candidate's code in this process (Landlock, a seccomp filter) ----------
# The file's own code runs here (its module level, ModelNew's constructor, a warm-up pass) with
# the runner's rights and must exec compilers, so the worker's seccomp filter does not fit. What
# Landlock gives instead, where the kernel has it: writes only inside the build folder, the
# runner's JIT folder of this key, TMPDIR and /dev (the device nodes, /dev/null); no TCP bind or
# connect (ABI 4); no signal to a process outside this one and its children, and no abstract
# unix socket outside them (ABI 6). Reads are not restricted (compilers read the toolkit, the
# headers, torch), and Landlock does not cover a connection to a pathname unix socket: a
# seccomp filter of its own (no_unix_sockets, after Landlock) denies making one. Both are
# inherited by every process it starts. docs/sandbox.md, "The compile tier"
# (runner/sandbox/confine.c's Landlock rules restrict reads and its profiles' seccomp filters
# forbid starting processes: neither fits a build; its kb_confine_no_unix_sockets is this one).
LL_CREATE_RULESET, LL_ADD_RULE, LL_RESTRICT_SELF = 444, 445, 446  # the same on every arch
LL_VERSION = 1 << 0
LL_RULE_PATH_BENEATH = 1
LL_FS_WRITE = ((1 << 1) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 9) |
               (1 << 10) | (1 << 11) | (1 << 12))  # write file, remove, make any
LL_FS_REFER, LL_FS_TRUNCATE = 1 << 13, 1 << 14   # ABI 2, ABI 3
LL_NET_TCP = (1 << 0) | (1 << 1)                 # bind, connect (ABI 4)
LL_SCOPES = (1 << 0) | (1 << 1)                  # abstract unix sockets, signals (ABI 6)
PR_SET_NO_NEW_PRIVS = 38


def confine_writes(paths):
    """Confines this process and what it starts as above, `paths` writable (those that do not
    exist are skipped). Returns "" or why it could not (no Landlock: the build goes on as
    before, said in its log)."""
    import ctypes

    class Attr(ctypes.Structure):
        _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64),
                    ("scoped", ctypes.c_uint64)]

    class Beneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(LL_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(LL_VERSION))
    if abi < 1:
        return "Landlock unavailable (%s)" % os.strerror(ctypes.get_errno())
    fs = LL_FS_WRITE | (LL_FS_REFER if abi >= 2 else 0) | (LL_FS_TRUNCATE if abi >= 3 else 0)
    attr = Attr(fs, LL_NET_TCP if abi >= 4 else 0, LL_SCOPES if abi >= 6 else 0)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    rs = libc.syscall(LL_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size),
                      ctypes.c_uint32(0))
    if rs < 0:
        return "landlock_create_ruleset: %s" % os.strerror(ctypes.get_errno())
    try:
        for path in paths:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                rule = Beneath(fs if os.path.isdir(path) else fs & ((1 << 1) | LL_FS_TRUNCATE),
                               fd)
                if libc.syscall(LL_ADD_RULE, ctypes.c_int(rs), ctypes.c_int(LL_RULE_PATH_BENEATH),
                                ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                    return "landlock_add_rule %s: %s" % (path,
                                                         os.strerror(ctypes.get_errno()))
            finally:
                os.close(fd)
        ul = ctypes.c_ulong  # prctl reads its variadic arguments as unsigned longs
        if libc.prctl(PR_SET_NO_NEW_PRIVS, ul(1), ul(0), ul(0), ul(0)) != 0:
            return "prctl(PR_SET_NO_NEW_PRIVS): %s" % os.strerror(ctypes.get_errno())
        if libc.syscall(LL_RESTRICT_SELF, ctypes.c_int(rs), ctypes.c_uint32(0)) != 0:
            return "landlock_restrict_self: %s" % os.strerror(ctypes.get_errno())
    finally:
        os.close(rs)
    return ""


CONFINE_LIB = "libkb-confine.so"  # next to this script, as for the worker (kb_sandbox_torch.py)


def no_unix_sockets():
    """libkb-confine.so's kb_confine_no_unix_sockets(): a seccomp filter on this process, its
    threads and everything it starts (nvcc, ninja, the host compiler, inductor's and Triton's
    subprocesses) under which socket(AF_UNIX) and a datagram socketpair fail with EACCES and
    io_uring with ENOSYS. Landlock does not cover a connection to a pathname unix socket, and
    reads are not restricted: without it the file's code could connect to a campaign's Redis
    (kb-launch --local serves it on results/<campaign>/redis/redis.sock, its password file
    readable) and forge results. A stream socketpair stays (connected for life: Python's
    multiprocessing, asyncio); so do os.pipe and the fork and spawn contexts (inductor's compile
    workers); a forkserver context cannot start. Returns "" or why it could not: the build
    then stops before the file's code runs (infra_error, never cached)."""
    import ctypes
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), CONFINE_LIB)
    try:
        lib = ctypes.CDLL(path)
        fn = lib.kb_confine_no_unix_sockets
    except (OSError, AttributeError) as e:
        return "cannot load %s: %s" % (path, first_line(e))
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    why = ctypes.create_string_buffer(256)
    if fn(why, ctypes.sizeof(why)) != 0:
        return why.value.decode("utf-8", "replace") or "kb_confine_no_unix_sockets failed"
    return ""


class ExtensionError(Exception):
    pass


def first_error(text):
    """The first line of compiler output that says error, else the message's first line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower() and not ln.startswith("Error building extension"):
            return ln[:200]
    return lines[0][:200] if lines else "no output"


def first_line(e):
    text = str(e).strip().splitlines()
    return text[-1] if text else type(e).__name__


def parse_args(argv):
    args = {"source": None, "oracle": None, "out": None, "backend": "host", "reference": False}
    i = 0
    while i < len(argv):
        if argv[i] == "--reference":
            args["reference"] = True
            i += 1
        elif i + 1 < len(argv) and argv[i] in ("--source", "--oracle", "--out", "--backend"):
            args[argv[i][2:]] = argv[i + 1]
            i += 2
        else:
            break
    if i != len(argv) or None in (args["oracle"], args["out"]) or \
            (args["source"] is None) != args["reference"] or \
            args["backend"] not in ("host", "cuda"):
        print("usage: kb_build_modelnew.py --source FILE --oracle FILE --out DIR "
              "--backend host|cuda\n"
              "       kb_build_modelnew.py --reference --oracle FILE --out DIR "
              "--backend host|cuda", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    return args


PR_SET_CHILD_SUBREAPER = 36


def adopt_orphans():
    """Makes this builder the subreaper of what the file's code starts (prctl), so a process
    that leaves its group and its parent (a new session, a double fork) is still its child, and
    makes SIGTERM end the build through end_leftovers."""
    import ctypes
    try:
        ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, ctypes.c_ulong(1), ctypes.c_ulong(0),
                                ctypes.c_ulong(0), ctypes.c_ulong(0))
    except (OSError, AttributeError):
        pass
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(EXIT_TERMINATED))


def children():
    """This process's children, {pid: command line}, from /proc."""
    me = str(os.getpid())
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                stat = f.read()
            if stat[stat.rindex(")") + 2:].split()[1] != me:
                continue
            with open("/proc/%s/cmdline" % name, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except (OSError, ValueError, IndexError):
            continue
        out[int(name)] = cmd or "pid %s" % name
    return out


def end_leftovers():
    """Kills, and reaps, every process the build left running: the runner kills the builder's
    process group, but a process the file's code started in a session of its own outlived it
    (found 2026-12-07: relu_build_daemon.py's `sleep` ran on after its build; the static rules
    do not see importlib.import_module("subprocess")). Orphans come to this builder
    (adopt_orphans), so it kills its children until none is left (a killed parent's children
    come next). Returns their command lines, for the build log. Inductor's compile workers, which
    end with their parent anyway, are among them after a torch.compile warm-up."""
    killed = []
    for _ in range(100):
        kids = children()
        if not kids:
            break
        for pid, cmd in kids.items():
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(cmd[:80])
            except OSError:
                pass
        for pid in kids:
            try:
                os.waitpid(pid, 0)
            except OSError:
                pass
    return killed


def main(argv):
    args = parse_args(argv)
    try:
        result = reference(args) if args["reference"] else build(args)
    finally:
        left = end_leftovers()
        if left:
            print("killed %d process(es) the build left running: %s" % (len(left),
                  "; ".join(left[:5])), file=sys.stderr)
    if result["status"] != "ok":
        # the build folder's name is of no use to the reader (and differs on every build)
        result["reason"] = result["reason"].replace(os.path.abspath(args["out"]) + "/", "")
        print(result["reason"], file=sys.stderr)
    with open(os.path.join(args["out"], "build.json"), "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
