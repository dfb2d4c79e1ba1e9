"""kb_sandbox_torch.py: the sandbox worker of tasks whose oracle is a PyTorch module.

usage: python3 kb_sandbox_torch.py --backend host|cuda --device N --dir DIR --parent PID

The runner starts it exactly as it starts kb-sandbox (runner/sandbox_client.c: posix_spawn, its
own process group, a scrubbed environment, a fresh working folder, the protocol on stdin/stdout
as one end of a socket pair) when a task's oracle is {"kind": "pytorch"}, and speaks the same
protocol (docs/sandbox.md): 4-byte big-endian length + one JSON object, requests hello,
prepare, eval, quit, and error replies naming the field. Standard library and torch only.

prepare: "oracle" is the task's reference source (a KernelBench-format file: class Model,
get_inputs(), get_init_inputs()). The module is built under torch.manual_seed(MODEL_SEED) on
the device, in training mode as KernelBench runs it; each input set is drawn on the device:
get_inputs() runs under torch.manual_seed(set seed) with the device as the default device (its
shapes, dtypes and values: randint targets, triangular matrices, softmax rows stay as the file
makes them); a set whose distribution is not the importer's standard one (normal (0, 1) or
uniform [0, 1)) has every floating-point input redrawn from it (and integer inputs, for
"integers"), with a device generator seeded by the set's seed and the input's index. When the
task lists more inputs than get_inputs() gives, the rest are the module's parameters, in
named_parameters() order (tools/kb-import-kernelbench lists them so); the candidate gets copies.
The reference outputs come from the module (TF32 off), must match the task's output dtypes and
shapes and be finite; inputs and references are checksummed. Failures are {"ok": false,
"reason"} (the oracle is trusted: the runner reports infra_error).

eval: as kb-sandbox: the candidate's kb_forward (docs/candidate-abi.md) is called through ctypes
on the tensors' memory (data_ptr) with the candidate's stream (a torch CUDA stream, on which
every torch operation of this process runs too; NULL on the host), outputs poisoned before
every call, every element compared (NaN and infinity never pass), inputs and references
checksummed after the check calls and after timing, input sets rotated between buffers before
timing, timed outputs re-checked. Timing: CUDA events on the candidate's stream (host: the
monotonic clock), the L2 flushed when asked, warm-up, calls under 10 us timed in batches behind
a spin kernel, samples until the noise, max_seconds or budget_s rule stops them. No kernel
trace and no hardware metrics ("trace_note", "metrics_note" say so when asked).

torch (this worker only; the runner sends it at the full tier): times the module in torch eager
and torch.compile (inductor, default mode, compiled once per prepared task) the same way, in
this process, on the same stream and input sets: "torch_eager" and "torch_compile" timing
objects in the reply ("torch_note" says why one is missing).
"""
import ctypes
import json
import math
import os
import resource
import signal
import socket
import struct
import sys
import time

MAX_FRAME = 16 << 20
MODEL_SEED = 0
SHORT_US = 10.0
BATCH_TARGET_US = 50.0
BATCH_MAX = 256
ENQUEUE_US = 6.0
MAX_TENSORS = 16
MAX_SETS = 32
# prepared tasks kept, as kb-sandbox; a tool driving the worker directly may lower it (the runner
# never passes this variable: it scrubs the environment)
MAX_PREPARED = int(os.environ.get("KB_SANDBOX_TORCH_MAX_PREPARED", "4") or 4)
CHUNK = 1 << 25  # elements per step of the checksums and comparisons
STATUS = ("ok", "compile_error", "wrong_output", "crash", "timeout", "rejected", "infra_error")
DTYPE_CODES = {"f32": 0, "f16": 1, "bf16": 2, "f64": 3, "i32": 4, "i64": 5, "u8": 6, "bool": 7}
POISON = {"f32": ("int32", 0x7fcbadad), "f64": ("int64", 0x7ff8badbadbadbad),
          "f16": ("int16", 0x7ead), "bf16": ("int16", 0x7fed)}
FLOATS = ("f32", "f16", "bf16", "f64")

torch = None
DEV = None  # the torch.device
STREAM = None  # torch.cuda.Stream of the candidate (cuda)


class KbTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int),
                ("shape", ctypes.c_int64 * 8)]


FORWARD = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(KbTensor), ctypes.c_int,
                           ctypes.POINTER(KbTensor), ctypes.c_int, ctypes.c_void_p)


class BadRequest(Exception):
    def __init__(self, field, reason):
        Exception.__init__(self, reason)
        self.field = field
        self.reason = reason


# ---- framing --------------------------------------------------------------------------------

def read_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf.extend(chunk)
    return bytes(buf)


def send(sock, msg):
    data = json.dumps(msg, allow_nan=False).encode()
    sock.sendall(struct.pack(">I", len(data)) + data)


# ---- process set-up ---------------------------------------------------------------------------

def setup(args):
    """Mirrors kb-sandbox's set-up: protocol off fds 0/1, other fds closed, signals, no core."""
    try:
        libc = ctypes.CDLL(None)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if args["parent"] > 0 and os.getppid() != args["parent"]:
        sys.exit(1)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(s, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    proto = os.dup(0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)  # whatever the candidate prints reaches the captured stderr
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd != proto:
            try:
                os.close(fd)
            except OSError:
                pass
    os.set_inheritable(proto, False)
    if args["dir"]:
        os.chdir(args["dir"])
    return socket.socket(fileno=proto)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()[:63]
    except OSError:
        pass
    return "cpu"


def open_device(backend, ordinal):
    global torch, DEV, STREAM
    import torch as torch_module
    torch = torch_module
    if backend == "host":
        DEV = torch.device("cpu")
        return
    if not torch.cuda.is_available() or ordinal >= torch.cuda.device_count():
        print("kb_sandbox_torch: no CUDA device %d (torch %s sees %d)" %
              (ordinal, torch.__version__, torch.cuda.device_count() if torch.cuda.is_available()
               else 0), file=sys.stderr)
        sys.exit(2)
    torch.cuda.set_device(ordinal)
    DEV = torch.device("cuda", ordinal)
    STREAM = torch.cuda.Stream(device=DEV)
    # every torch operation of this process (draws, poisoning, flushes, checks, the module) goes
    # on the candidate's stream, ordered with its kernels: the stream does not synchronize with
    # the legacy default stream
    torch.cuda.set_stream(STREAM)


def hello(backend, ordinal):
    msg = {"op": "hello", "pid": os.getpid(), "backend": backend, "ordinal": ordinal,
           "worker": "pytorch", "torch": torch.__version__, "cc": "0.0", "sm_count": 0,
           "mem_bytes": 0, "l2_bytes": 0, "runtime": 0, "driver": 0}
    if backend == "host":
        msg["device"] = cpu_model()
        return msg
    p = torch.cuda.get_device_properties(DEV)
    msg.update(device=p.name[:63], cc="%d.%d" % (p.major, p.minor),
               sm_count=p.multi_processor_count, mem_bytes=p.total_memory,
               l2_bytes=getattr(p, "L2_cache_size", 0))
    v = (torch.version.cuda or "0.0").split(".")
    msg["runtime"] = int(v[0]) * 1000 + int(v[1]) * 10 if len(v) > 1 else 0
    return msg


# ---- request fields ---------------------------------------------------------------------------

def get(req, key, kind, required=True, default=None, lo=None, hi=None, where=""):
    path = where + key
    if key not in req:
        if required:
            raise BadRequest(path, '"%s" is missing' % path)
        return default
    v = req[key]
    if kind == "str":
        if not isinstance(v, str):
            raise BadRequest(path, '"%s" must be a string' % path)
    elif kind == "bool":
        if not isinstance(v, bool):
            raise BadRequest(path, '"%s" must be true or false' % path)
    elif kind in ("int", "num"):
        ok = isinstance(v, (int, float)) and not isinstance(v, bool)
        if ok and kind == "int":
            ok = float(v).is_integer()
        if not ok or not math.isfinite(v):
            raise BadRequest(path, '"%s" must be %s' % (path, "an integer" if kind == "int"
                                                        else "a number"))
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise BadRequest(path, '"%s" must be in %g..%g' % (path, lo, hi))
        v = int(v) if kind == "int" else float(v)
    return v


def tensors(req, key):
    v = req.get(key)
    if not isinstance(v, list) or not 1 <= len(v) <= MAX_TENSORS:
        raise BadRequest(key, '"%s" must be an array of 1..%d tensors' % (key, MAX_TENSORS))
    out = []
    for i, t in enumerate(v):
        where = "%s[%d]" % (key, i)
        if not isinstance(t, dict):
            raise BadRequest(where, '"%s" must be an object' % where)
        name = get(t, "name", "str", where=where + ".")
        dtype = get(t, "dtype", "str", where=where + ".")
        if dtype not in DTYPE_CODES:
            raise BadRequest(where + ".dtype", '"%s.dtype": unknown dtype "%s"' % (where, dtype))
        shape = t.get("shape")
        if not isinstance(shape, list) or len(shape) > 8 or not all(
                isinstance(d, int) and not isinstance(d, bool) and 1 <= d < 2**31 for d in shape):
            raise BadRequest(where + ".shape", '"%s.shape" must be 0..8 extents of 1..2^31-1'
                             % where)
        out.append({"name": name, "dtype": dtype, "shape": shape})
    return out


def input_sets(req):
    v = req.get("sets")
    if not isinstance(v, list) or not 1 <= len(v) <= MAX_SETS:
        raise BadRequest("sets", '"sets" must be an array of 1..%d input sets' % MAX_SETS)
    out = []
    for i, s in enumerate(v):
        where = "sets[%d]" % i
        if not isinstance(s, dict):
            raise BadRequest(where, '"%s" must be an object' % where)
        seed = get(s, "seed", "int", lo=0, hi=2**63, where=where + ".")
        dist = get(s, "distribution", "str", where=where + ".")
        if dist not in ("uniform", "normal", "integers"):
            raise BadRequest(where + ".distribution", '"%s.distribution": unknown distribution '
                             '"%s"' % (where, dist))
        low = get(s, "low", "num", where=where + ".")
        high = get(s, "high", "num", where=where + ".")
        out.append({"seed": seed, "distribution": dist, "low": low, "high": high})
    return out


# ---- tensors on the device --------------------------------------------------------------------

def torch_dtype(name):
    return {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
            "f64": torch.float64, "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8,
            "bool": torch.bool}[name]


def sync():
    if DEV.type == "cuda":
        torch.cuda.synchronize(DEV)


def poison(t, dtype):
    if dtype in POISON:
        view, bits = POISON[dtype]
        if bits >= 1 << (8 * {"int16": 2, "int32": 4, "int64": 8}[view] - 1):
            bits -= 1 << (8 * {"int16": 2, "int32": 4, "int64": 8}[view])
        t.view(getattr(torch, view)).fill_(bits)
    else:
        t.view(torch.uint8).fill_(0xa5)


def checksum(t):
    """Two wrapping int64 sums over the tensor's bytes (as int32 words where they fit)."""
    flat = t.reshape(-1).view(torch.uint8)
    if flat.numel() % 4 == 0:
        flat = flat.view(torch.int32)
    s1 = 0
    s2 = 0
    for at in range(0, flat.numel(), CHUNK):
        c = flat[at:at + CHUNK].to(torch.int64)
        w = torch.arange(at + 1, at + 1 + c.numel(), dtype=torch.int64, device=c.device)
        s1 += int(c.sum())
        s2 += int((c * w).sum())
    return (s1 & (2**64 - 1), s2 & (2**64 - 1))


def compare(got, ref, dtype, atol, rtol):
    """kb_verify's rule. Returns (bad, checked, first_bad, got, expected, max_abs, max_rel)."""
    g = got.reshape(-1)
    e = ref.reshape(-1)
    n = g.numel()
    bad = 0
    first = -1
    fg = fe = 0.0
    max_abs = 0.0
    max_rel = 0.0
    for at in range(0, n, CHUNK):
        if dtype == "bool":
            gc = g[at:at + CHUNK].view(torch.uint8).to(torch.float64)
            ec = e[at:at + CHUNK].view(torch.uint8).to(torch.float64)
        else:
            gc = g[at:at + CHUNK].to(torch.float64)
            ec = e[at:at + CHUNK].to(torch.float64)
        fin = torch.isfinite(gc) & torch.isfinite(ec)
        diff = (gc - ec).abs()
        ok = fin & (diff <= atol + rtol * ec.abs())
        if dtype == "bool":
            ok = ok & (gc <= 1)
        nb = int((~ok).sum())
        if fin.any():
            max_abs = max(max_abs, float(diff[fin].max()))
            nz = fin & (ec != 0)
            if nz.any():
                max_rel = max(max_rel, float((diff[nz] / ec[nz].abs()).max()))
        if nb and first < 0:
            i = int((~ok).nonzero()[0][0])
            first = at + i
            fg, fe = float(gc[i]), float(ec[i])
        bad += nb
    return bad, n, first, fg, fe, max_abs, max_rel


def describe(bad, checked, first, g, e):
    return "element %d is %s, expected %s (%d of %d bad)" % (first, fmt(g), fmt(e), bad, checked)


def fmt(x):
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return "%.9g" % x


# ---- the task ---------------------------------------------------------------------------------

class Failure(Exception):
    """prepare cannot make the task (the oracle is trusted: the runner reports infra_error)."""


class Task:
    pass


def exec_reference(path):
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise Failure("cannot read the oracle %s: %s" % (path, e))
    ns = {"__name__": "kb_reference", "__file__": path}
    try:
        exec(compile(source, path, "exec"), ns)
    except Exception as e:
        raise Failure("the oracle %s raised %s: %s" % (os.path.basename(path), type(e).__name__, e))
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if name not in ns:
            raise Failure("the oracle %s has no %s" % (os.path.basename(path), name))
    return ns


class on_device:
    """Factories make tensors on the task's device (torch >= 2.0); on the host, .cuda() and a
    device="cuda" argument stay on the CPU."""

    def __enter__(self):
        self.ctx = None
        self.saved = None
        if DEV.type == "cuda" and hasattr(torch.device, "__enter__"):
            self.ctx = torch.device(DEV)
            self.ctx.__enter__()
        elif DEV.type == "cpu":
            self.saved = torch.Tensor.cuda
            torch.Tensor.cuda = lambda t, *a, **k: t
        return self

    def __exit__(self, *exc):
        if self.ctx is not None:
            self.ctx.__exit__(*exc)
        if self.saved is not None:
            torch.Tensor.cuda = self.saved
        return False


def draw(task, k):
    """The inputs of set k (new tensors on the device, contiguous)."""
    s = task.sets[k]
    torch.manual_seed(s["seed"])
    with on_device():
        got = task.ns["get_inputs"]()
    if not isinstance(got, (list, tuple)) or not all(isinstance(t, torch.Tensor) for t in got):
        raise Failure("get_inputs() must return a list of tensors")
    got = [t.to(DEV).contiguous() for t in got]
    n_fwd = len(got)
    if task.params is None:  # decided on the first draw: does the task list the parameters?
        every = [p for _, p in task.module.named_parameters()]
        if n_fwd == len(task.inputs):
            task.params = []
        elif n_fwd + len(every) == len(task.inputs):
            task.params = every
        else:
            raise Failure("the task lists %d inputs; get_inputs() gives %d and the module has "
                          "%d parameters" % (len(task.inputs), n_fwd, len(every)))
    got += [p.detach().contiguous().clone() for p in task.params]
    for i, (t, spec) in enumerate(zip(got, task.inputs)):
        if list(t.shape) != spec["shape"] or t.dtype != torch_dtype(spec["dtype"]):
            raise Failure('input "%s" (inputs[%d]) is %s %s, the task says %s %s'
                          % (spec["name"], i, str(t.dtype).replace("torch.", ""),
                             list(t.shape), spec["dtype"], spec["shape"]))
        if i >= n_fwd or standard(s):
            continue
        g = torch.Generator(device=DEV)
        g.manual_seed((s["seed"] * 1000003 + i) % (2**63))
        if spec["dtype"] in FLOATS:
            if s["distribution"] == "normal":
                t.normal_(s["low"], s["high"], generator=g)
            elif s["distribution"] == "uniform":
                t.uniform_(s["low"], s["high"], generator=g)
            else:
                t.random_(int(s["low"]), int(s["high"]), generator=g)
        elif s["distribution"] == "integers" and spec["dtype"] != "bool":
            t.random_(int(s["low"]), int(s["high"]), generator=g)
    return got


def standard(s):
    """True for the sets the importer writes (normal (0, 1) or uniform [0, 1), what randn and
    rand draw): get_inputs()'s own values are kept, so structured inputs (triangular or
    symmetric matrices, softmax rows, +-1 targets) stay what the task file makes."""
    return s["distribution"] in ("normal", "uniform") and s["low"] == 0 and s["high"] == 1


def run_module(module, inputs):
    with torch.no_grad():
        out = module(*inputs)
    return list(out) if isinstance(out, (list, tuple)) else [out]


def prepare_task(req):
    task = Task()
    task.key = get(req, "key", "str")
    task.oracle = get(req, "oracle", "str")
    task.inputs = tensors(req, "inputs")
    task.outputs = tensors(req, "outputs")
    task.sets = input_sets(req)
    task.atol = get(req, "atol", "num", lo=0, hi=1e300)
    task.rtol = get(req, "rtol", "num", lo=0, hi=1e300)
    ns = exec_reference(task.oracle)
    task.ns = ns
    torch.manual_seed(MODEL_SEED)
    try:
        with on_device():
            module = ns["Model"](*ns["get_init_inputs"]())
        task.module = module.to(DEV)  # left in training mode, as KernelBench runs it
    except Exception as e:
        raise Failure("Model(*get_init_inputs()) raised %s: %s" % (type(e).__name__, e))
    task.params = None
    task.set_inputs = []
    task.refs = []
    tf32 = None
    if DEV.type == "cuda":
        tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    try:
        for k in range(len(task.sets)):
            try:
                inputs = draw(task, k)
                outs = run_module(task.module, inputs[:len(inputs) - len(task.params)])
            except Failure:
                raise
            except Exception as e:
                raise Failure("input set %d: %s: %s" % (k, type(e).__name__, e))
            if len(outs) != len(task.outputs):
                raise Failure("the module returns %d outputs, the task lists %d"
                              % (len(outs), len(task.outputs)))
            refs = []
            for o, (t, spec) in enumerate(zip(outs, task.outputs)):
                if not isinstance(t, torch.Tensor) or list(t.shape) != spec["shape"] or \
                        t.dtype != torch_dtype(spec["dtype"]):
                    raise Failure('output "%s" (outputs[%d]) is %s, the task says %s %s'
                                  % (spec["name"], o, describe_tensor(t), spec["dtype"],
                                     spec["shape"]))
                t = t.detach().contiguous().clone()
                if spec["dtype"] in FLOATS and not bool(torch.isfinite(t).all()):
                    raise Failure('the oracle\'s output "%s" of input set %d is not finite'
                                  % (spec["name"], k))
                refs.append(t)
            task.set_inputs.append(inputs)
            task.refs.append(refs)
    finally:
        if tf32 is not None:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
    sync()
    task.in_sums = [[checksum(t) for t in ins] for ins in task.set_inputs]
    task.ref_sums = [[checksum(t) for t in refs] for refs in task.refs]
    task.chk = [[torch.empty_like(r) for r in refs] for refs in task.refs]
    task.tim = [[torch.empty_like(r) for r in refs] for refs in task.refs]
    task.holds = list(range(len(task.sets)))
    task.damaged = False
    task.compiled = None
    task.compile_error = None
    return task


def describe_tensor(t):
    if not isinstance(t, torch.Tensor):
        return type(t).__name__
    return "%s %s" % (str(t.dtype).replace("torch.", ""), list(t.shape))


# ---- evaluation -------------------------------------------------------------------------------

class Verdict(Exception):
    def __init__(self, status, reason, fatal=False):
        Exception.__init__(self, reason)
        self.status = status
        self.reason = reason
        self.fatal = fatal


def load_library(path, what):
    try:
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
    except OSError as e:
        text = str(e)
        if text.startswith(path + ": "):
            text = text[len(path) + 2:]
        raise Verdict("compile_error" if what == "" else "infra_error",
                      "cannot load the %slibrary: %s" % (what, text))
    try:
        fn = lib.kb_forward
    except AttributeError:
        raise Verdict("compile_error" if what == "" else "infra_error",
                      "the %slibrary does not export kb_forward" % what)
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.POINTER(KbTensor), ctypes.c_int, ctypes.POINTER(KbTensor),
                   ctypes.c_int, ctypes.c_void_p]
    return lib, fn


def descriptors(tensors_, specs):
    arr = (KbTensor * len(tensors_))()
    for i, (t, s) in enumerate(zip(tensors_, specs)):
        arr[i].data = t.data_ptr()
        arr[i].dtype = DTYPE_CODES[s["dtype"]]
        arr[i].ndim = len(s["shape"])
        for d, x in enumerate(s["shape"]):
            arr[i].shape[d] = x
    return arr


class Run:
    def __init__(self, task, e):
        self.task = task
        self.e = e
        self.n = len(task.sets) if e["sets"] <= 0 or e["sets"] > len(task.sets) else e["sets"]
        self.stream_ptr = STREAM.cuda_stream if STREAM is not None else None
        self.max_abs = None
        self.max_rel = None
        self.flush = None
        if e["flush_l2"] and DEV.type == "cuda":
            l2 = getattr(torch.cuda.get_device_properties(DEV), "L2_cache_size", 0) or (64 << 20)
            self.flush = torch.empty(2 * l2, dtype=torch.uint8, device=DEV)

    def call(self, fn, s, outs, who, phase):
        t = self.task
        ins = descriptors(t.set_inputs[s], t.inputs)
        out = descriptors(outs[s], t.outputs)
        ret = fn(ins, len(t.inputs), out, len(t.outputs), self.stream_ptr)
        if ret != 0:
            raise Verdict("crash", "%skb_forward returned %d on input set %d (%s call)"
                          % (who, ret, s, phase))

    def sync(self, s, phase):
        try:
            if STREAM is not None:
                STREAM.synchronize()
        except RuntimeError as e:
            raise Verdict("crash", "device error after the %s call on input set %d: %s"
                          % (phase, s, first_line(e)), fatal=True)

    def integrity(self, when):
        t = self.task
        for s in range(len(t.sets)):
            held = t.holds[s]
            for i, x in enumerate(t.set_inputs[s]):
                if checksum(x) == t.in_sums[held][i]:
                    continue
                t.damaged = True
                fresh = draw(t, held)[i]
                first = bitwise_first(x, fresh)
                where = "element %d of " % first if first >= 0 else ""
                raise Verdict("rejected", 'modified its inputs: %sinput "%s" of input set %d '
                              'changed (%s)' % (where, t.inputs[i]["name"], held, when))
            for o, r in enumerate(t.refs[s]):
                if checksum(r) != t.ref_sums[s][o]:
                    t.damaged = True
                    raise Verdict("rejected", 'wrote outside its outputs: the evaluator\'s '
                                  'reference for output "%s" of input set %d changed (%s)'
                                  % (t.outputs[o]["name"], s, when), fatal=True)

    def outputs_pass(self, outs, mask):
        t = self.task
        why = None
        for s in range(self.n):
            if not mask & (1 << s):
                continue
            held = t.holds[s]
            for o, spec in enumerate(t.outputs):
                bad, n, first, g, e, mabs, mrel = compare(outs[s][o], t.refs[held][o],
                                                          spec["dtype"], t.atol, t.rtol)
                self.max_abs = mabs if self.max_abs is None else max(self.max_abs, mabs)
                self.max_rel = mrel if self.max_rel is None else max(self.max_rel, mrel)
                if bad and why is None:
                    why = 'output "%s" of input set %d%s: %s' % (
                        spec["name"], held, " (moved to another buffer)" if held != s else "",
                        describe(bad, n, first, g, e))
        return why

    def untouched_set(self, outs):
        t = self.task
        for s in range(1, self.n):
            for o, spec in enumerate(t.outputs):
                if spec["dtype"] in FLOATS and bool(torch.isnan(outs[s][o]).all()):
                    return s, o
        return None

    def rotate(self, shift):
        t = self.task
        for b in range(self.n):
            want = (b + shift) % self.n
            if t.holds[b] == want:
                continue
            fresh = draw(t, want)
            for x, y in zip(t.set_inputs[b], fresh):
                x.copy_(y)
            t.holds[b] = want
        sync()


def first_line(e):
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def bitwise_first(x, y):
    """The flat index of the first element of x whose bytes differ from y's, -1 when none."""
    a = x.reshape(-1).view(torch.uint8)
    b = y.reshape(-1).view(torch.uint8)
    diff = (a != b).nonzero()
    return int(diff[0][0]) // x.element_size() if diff.numel() else -1


class Timer:
    """Times one sample of `batch` calls: CUDA events on the candidate's stream, or the clock."""

    def __init__(self):
        if STREAM is not None:
            self.start = torch.cuda.Event(enable_timing=True)
            self.end = torch.cuda.Event(enable_timing=True)

    def begin(self, run, batch):
        if STREAM is None:
            self.t0 = time.perf_counter()
            return
        with torch.cuda.stream(STREAM):
            if run.flush is not None:
                run.flush.zero_()
            if batch > 1:
                torch.cuda._sleep(int((20.0 + ENQUEUE_US * batch) * 2000))
        self.start.record(STREAM)

    def stop(self, batch):
        if STREAM is None:
            return (time.perf_counter() - self.t0) * 1e6 / batch
        self.end.record(STREAM)
        self.end.synchronize()
        return self.start.elapsed_time(self.end) * 1000.0 / batch


def stats(samples, warmup):
    out = {"samples": len(samples), "warmup": warmup}
    if not samples:
        return out
    v = sorted(samples)
    n = len(v)

    def q(p):
        pos = p * (n - 1)
        lo = int(math.floor(pos))
        hi = lo + 1 if lo + 1 < n else lo
        return v[lo] + (v[hi] - v[lo]) * (pos - lo)
    mean = sum(v) / n
    ss = sum((x - mean) ** 2 for x in v)
    out.update(median_us=q(0.5), p10_us=q(0.1), p90_us=q(0.9), mean_us=mean, min_us=v[0],
               noise=math.sqrt(ss / (n - 1)) / mean if n > 1 and mean > 0 else 0.0)
    return out


def sample_loop(run, one, warm, start_time):
    """Warm-up, a probe for batching, then samples of `one(batch, first_set)` -> us per call
    until a stopping rule. Returns (samples, batch)."""
    e = run.e
    for w in range(warm):
        one(1, w % run.n, timed=False)
    est = one(1, 0, timed=True)
    batch = 1
    if STREAM is not None and est < SHORT_US:
        batch = int(math.ceil(BATCH_TARGET_US / max(est, 0.5)))
        batch = min(max(batch, 2), BATCH_MAX)
    samples = []
    timed = 0.0
    nxt = 0
    while len(samples) < e["max_samples"]:
        us = one(batch, nxt, timed=True)
        nxt = (nxt + batch) % run.n
        samples.append(us)
        timed += us * batch * 1e-6
        n = len(samples)
        if n < e["min_samples"]:
            continue
        if timed >= e["max_seconds"] or time.monotonic() - start_time >= e["budget_s"]:
            break
        mean = sum(samples) / n
        if n > 1 and mean > 0:
            var = sum((x - mean) ** 2 for x in samples) / (n - 1)
            if math.sqrt(var) / mean < e["noise"]:
                break
    return samples, batch


def evaluate(task, e):
    reply = {"op": "eval", "status": "ok", "reason": "", "sets_checked": 0, "batch": 1,
             "fatal": False}
    run = Run(task, e)
    start = time.monotonic()
    lib = blib = None
    try:
        lib, fn = load_library(e["library"], "")
        bfn = None
        if e.get("baseline") and e["max_samples"] > 0:
            blib, bfn = load_library(e["baseline"], "baseline ")
        for s in range(run.n):
            poison_set(task.chk, s, task)
            run.call(fn, s, task.chk, "", "check")
            run.sync(s, "check")
        run.integrity("after the check calls")
        reply["sets_checked"] = run.n
        why = run.outputs_pass(task.chk, (1 << run.n) - 1)
        if why is not None:
            if run.n >= 2 and run.outputs_pass(task.chk, 1) is None:
                u = run.untouched_set(task.chk)
                if u is not None:
                    raise Verdict("rejected", 'did the work on the first call only: output "%s" '
                                  'of input set %d was right on the first call and left '
                                  'untouched (still poisoned) on call %d'
                                  % (task.outputs[u[1]]["name"], u[0], u[0] + 1))
            raise Verdict("wrong_output", why)
        if e["max_samples"] <= 0:
            return finish(reply, run)
        if run.n >= 2:
            run.rotate(1)
        timer = Timer()
        mask = [0]

        def cand(batch, first, timed):
            for b in range(min(batch, run.n)):
                poison_set(task.tim, (first + b) % run.n, task)
            if timed:
                timer.begin(run, batch)
            for b in range(batch):
                s = (first + b) % run.n
                run.call(fn, s, task.tim, "", "timed" if timed else "warm-up")
                mask[0] |= 1 << s
            if not timed:
                run.sync(first, "warm-up")
                return 0.0
            try:
                return timer.stop(batch)
            except RuntimeError as err:
                raise Verdict("crash", "device error during a timed call: %s" % first_line(err),
                              fatal=True)

        samples, batch = sample_loop(run, cand, e["warmup"], start)
        reply["batch"] = batch
        base_samples = None
        if bfn is not None:
            def base(batch_, first, timed):
                if timed:
                    timer.begin(run, batch_)
                for b in range(batch_):
                    run.call(bfn, (first + b) % run.n, task.chk, "the baseline's ", "timed")
                if not timed:
                    run.sync(first, "warm-up")
                    return 0.0
                return timer.stop(batch_)
            base_samples, _ = sample_loop(run, base, e["warmup"], start)
        run.integrity("after the timed calls")
        if e["recheck"]:
            why = run.outputs_pass(task.tim, mask[0])
            if why is not None:
                raise Verdict("rejected", "outputs right on the first call but wrong after "
                              "repeated calls: %s" % why)
        reply["timing"] = stats(samples, e["warmup"])
        if base_samples:
            reply["baseline_timing"] = stats(base_samples, e["warmup"])
        if e.get("trace"):
            reply["trace_note"] = "kernel trace not recorded: the PyTorch worker has none"
        if e.get("metrics"):
            reply["metrics_note"] = "no hardware metrics: the PyTorch worker reads none"
    except Verdict as v:
        reply["status"] = v.status
        reply["reason"] = v.reason[:255]
        reply["fatal"] = v.fatal
    except Failure as f:
        reply["status"] = "infra_error"
        reply["reason"] = str(f)[:255]
    finally:
        if not reply["fatal"]:
            try:
                run.rotate(0)
            except Exception:
                task.damaged = True
    return finish(reply, run)


def poison_set(outs, s, task):
    for o, spec in enumerate(task.outputs):
        poison(outs[s][o], spec["dtype"])


def finish(reply, run):
    if run.max_abs is not None:
        reply["max_abs_err"] = run.max_abs
        reply["max_rel_err"] = run.max_rel
    return reply


def time_torch(task, e):
    """The "torch" request: times the module in torch eager and torch.compile (compiled once
    per prepared task, in the warm-up) on the candidate's stream, as candidates are timed."""
    reply = {"op": "torch"}
    run = Run(task, e)
    timer = Timer()
    notes = []
    n_fwd = len(task.inputs) - len(task.params)

    def timed_module(fwd):
        def one(batch, first, timed):
            if timed:
                timer.begin(run, batch)
            ctx = torch.cuda.stream(STREAM) if STREAM is not None else None
            if ctx is not None:
                ctx.__enter__()
            try:
                with torch.no_grad():
                    for b in range(batch):
                        fwd(*task.set_inputs[(first + b) % run.n][:n_fwd])
            finally:
                if ctx is not None:
                    ctx.__exit__(None, None, None)
            if not timed:
                sync()
                return 0.0
            return timer.stop(batch)
        return one

    start = time.monotonic()
    try:
        samples, _ = sample_loop(run, timed_module(task.module), e["warmup"], start)
        reply["torch_eager"] = stats(samples, e["warmup"])
    except Exception as err:
        notes.append("torch eager failed: %s: %s" % (type(err).__name__, first_line(err)))
    if not hasattr(torch, "compile"):
        notes.append("no torch.compile in torch %s" % torch.__version__)
    elif task.compile_error is not None:
        notes.append(task.compile_error)
    else:
        try:
            if task.compiled is None:
                task.compiled = torch.compile(task.module)
            start = time.monotonic()
            samples, _ = sample_loop(run, timed_module(task.compiled), max(e["warmup"], 1), start)
            reply["torch_compile"] = stats(samples, max(e["warmup"], 1))
        except Exception as err:
            task.compile_error = "torch.compile failed: %s: %s" % (type(err).__name__,
                                                                   first_line(err))
            notes.append(task.compile_error)
    if notes:
        reply["torch_note"] = "; ".join(notes)[:255]
    return reply


# ---- the message loop -------------------------------------------------------------------------

def eval_spec(req, torch_op=False):
    e = {"key": get(req, "key", "str"),
         "library": None if torch_op else get(req, "library", "str"),
         "baseline": get(req, "baseline", "str", required=False),
         "sets": get(req, "sets", "int", lo=0, hi=MAX_SETS),
         "warmup": get(req, "warmup", "int", lo=0, hi=1000000),
         "min_samples": get(req, "min_samples", "int", False, 10, 0, 10000000),
         "max_samples": get(req, "max_samples", "int", lo=0, hi=10000000),
         "noise": get(req, "noise", "num", False, 0.005, 0, 1e9),
         "max_seconds": get(req, "max_seconds", "num", False, 0.5, 0, 1e9),
         "budget_s": get(req, "budget_s", "num", False, 1e9, 0, 1e9),
         "flush_l2": get(req, "flush_l2", "bool"),
         "recheck": False if torch_op else get(req, "recheck", "bool"),
         "trace": get(req, "trace", "bool", False, False),
         "metrics": get(req, "metrics", "bool", False, False)}
    if e["min_samples"] > e["max_samples"]:
        if "min_samples" in req:
            raise BadRequest("min_samples", '"min_samples" must not exceed "max_samples"')
        e["min_samples"] = e["max_samples"]
    return e


def serve(sock, backend, ordinal):
    prepared = {}  # key -> Task
    used = {}
    clock = 0

    def touch(key):
        """Marks the task under `key` the most recently used."""
        nonlocal clock
        clock += 1
        used[key] = clock

    def use(key):
        """The task prepared under `key`, marked the most recently used."""
        task = prepared.get(key)
        if task is None:
            raise BadRequest("key", '"key": no task is prepared under this key (send '
                             'prepare first)')
        touch(key)
        return task

    while True:
        head = read_exact(sock, 4)
        if head is None:
            return 0
        n = struct.unpack(">I", head)[0]
        if n > MAX_FRAME:
            send(sock, {"op": "error", "field": "", "reason": "frame of %d bytes is over the "
                        "16 MiB limit" % n})
            return 1
        body = read_exact(sock, n)
        if body is None:
            return 0
        try:
            req = json.loads(body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as err:
            send(sock, {"op": "error", "field": "", "reason": "not a JSON object: %s" % err})
            continue
        if not isinstance(req, dict) or not isinstance(req.get("op"), str):
            send(sock, {"op": "error", "field": "" if not isinstance(req, dict) else "op",
                        "reason": "a request must be a JSON object with a string \"op\""})
            continue
        op = req["op"]
        try:
            if op == "hello":
                send(sock, hello(backend, ordinal))
            elif op == "quit":
                send(sock, {"op": "bye"})
                return 0
            elif op == "prepare":
                key = get(req, "key", "str")
                t0 = time.monotonic()
                if key in prepared:
                    touch(key)
                    send(sock, {"op": "prepare", "ok": True, "key": key, "cached": True,
                                "seconds": 0.0})
                    continue
                reply = do_prepare(req, prepared, used)
                if reply["ok"]:
                    touch(key)
                reply["seconds"] = time.monotonic() - t0
                send(sock, reply)
            elif op == "eval":
                e = eval_spec(req)
                task = use(e["key"])
                t0 = time.monotonic()
                reply = evaluate(task, e)
                reply["seconds"] = time.monotonic() - t0
                if task.damaged:
                    del prepared[e["key"]]
                send(sock, reply)
                if reply["fatal"]:
                    return 3
            elif op == "torch":
                e = eval_spec(req, torch_op=True)
                task = use(e["key"])
                t0 = time.monotonic()
                reply = time_torch(task, e)
                reply["seconds"] = time.monotonic() - t0
                send(sock, reply)
            else:
                raise BadRequest("op", 'unknown request "%s"' % op)
        except BadRequest as b:
            send(sock, {"op": "error", "field": b.field, "reason": b.reason})


def do_prepare(req, prepared, used):
    key = req["key"]
    tensors(req, "inputs")  # field errors before any work
    tensors(req, "outputs")
    input_sets(req)
    get(req, "oracle", "str")
    for k in ("atol", "rtol"):
        get(req, k, "num", lo=0, hi=1e300)
    while len(prepared) >= MAX_PREPARED:
        oldest = min(prepared, key=lambda k: used.get(k, 0))
        del prepared[oldest]
    for attempt in (0, 1):
        try:
            task = prepare_task(req)
            prepared[key] = task
            return {"op": "prepare", "ok": True, "key": key, "cached": False}
        except Failure as f:
            return {"op": "prepare", "ok": False, "reason": str(f)[:255], "fatal": False}
        except RuntimeError as err:  # out of device memory: drop the others, try once more
            if attempt == 0 and prepared:
                prepared.clear()
                if DEV.type == "cuda":
                    torch.cuda.empty_cache()
                continue
            return {"op": "prepare", "ok": False, "reason": "%s: %s" % (
                type(err).__name__, first_line(err))[:255], "fatal": False}


def parse_args(argv):
    args = {"backend": "host", "device": 0, "dir": "", "parent": 0}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--backend", "--device", "--dir", "--parent") and i + 1 < len(argv):
            v = argv[i + 1]
            args[a[2:]] = int(v) if a in ("--device", "--parent") else v
            i += 2
        else:
            print("usage: kb_sandbox_torch.py --backend host|cuda --device N --dir DIR "
                  "--parent PID", file=sys.stderr)
            sys.exit(2)
    if args["backend"] not in ("host", "cuda"):
        print("kb_sandbox_torch: --backend must be host or cuda", file=sys.stderr)
        sys.exit(2)
    return args


def main(argv):
    args = parse_args(argv)
    sock = setup(args)
    open_device(args["backend"], args["device"])
    try:
        return serve(sock, args["backend"], args["device"])
    except (BrokenPipeError, ConnectionResetError):
        return 1


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(code)
