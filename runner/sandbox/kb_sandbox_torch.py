"""kb_sandbox_torch.py: the sandbox worker of tasks whose oracle is a PyTorch module.

usage: python3 kb_sandbox_torch.py --backend host|cuda --device N --dir DIR --parent PID
                                   [--ro PATH]... [--trusted]

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

Trust layers (docs/sandbox.md "The PyTorch worker"): before the first candidate library is
loaded, the process confines itself through libkb-confine.so (next to this script; a missing
library is a start failure, exit 2, unless KB_CONFINE_OPTIONAL=1): seccomp profile "python" and
Landlock, read-only to the interpreter, torch, the libraries mapped and the --ro paths,
read-write to --dir and the device nodes. Timed samples include calls on inputs the candidate
has never seen (fresh draws under never-used seeds, verified after the call against the module
run on them); times on those inconsistent with times on repeated inputs are "rejected". Two
calls on the same inputs must agree ("not deterministic"); at flushed tiers (CUDA) a time under
what the measured copy bandwidth allows for the bytes moved is "rejected"; the L2 persisting
window is reset before every timed sample. Candidate-visible tensors live in their own
allocations between guards (host: PROT_NONE pages); references are stored masked.

torch (the --trusted worker only; the runner sends it at the full tier to a second worker that
never loads a candidate and is not confined, since inductor compiles in subprocesses): times the
module in torch eager and torch.compile (inductor, default mode, compiled once per prepared
task) the same way, on its own stream and the same input sets: "torch_eager" and
"torch_compile" timing objects in the reply ("torch_note" says why one is missing). A trusted
worker refuses "eval"; an untrusted one refuses "torch".
"""
import builtins
import contextlib
import ctypes
import gc
import json
import math
import mmap
import operator
import os
import random as py_random
import re
import resource
import shutil
import signal
import socket
import stat
import struct
import sys
import time
import warnings
import weakref

MAX_FRAME = 16 << 20
MODEL_SEED = 0
SHORT_US = 10.0
BATCH_TARGET_US = 50.0
BATCH_MAX = 256
ENQUEUE_US = 6.0
MAX_TENSORS = 1024  # KB_MAX_TENSORS (common/include/kb/task.h)
MAX_SETS = 32
# prepared tasks kept, as kb-sandbox; a tool driving the worker directly may lower it (the runner
# never passes this variable: it scrubs the environment)
MAX_PREPARED = int(os.environ.get("KB_SANDBOX_TORCH_MAX_PREPARED", "4") or 4)
CHUNK = 1 << 25  # elements per step of the checksums and comparisons
FORMATS = ("native", "kernelbench")  # enum kb_cand_format (common/include/kb/candidate.h)
STATUS = ("ok", "compile_error", "wrong_output", "crash", "timeout", "rejected", "infra_error")
DTYPE_CODES = {"f32": 0, "f16": 1, "bf16": 2, "f64": 3, "i32": 4, "i64": 5, "u8": 6, "bool": 7}
POISON = {"f32": ("int32", 0x7fcbadad), "f64": ("int64", 0x7ff8badbadbadbad),
          "f16": ("int16", 0x7ead), "bf16": ("int16", 0x7fed)}
FLOATS = ("f32", "f16", "bf16", "f64")
INT_VIEW = {"f32": "int32", "f64": "int64", "f16": "int16", "bf16": "int16", "i32": "int32",
            "i64": "int64", "u8": "uint8", "bool": "uint8"}
ELEM_SIZE = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "i32": 4, "i64": 8, "u8": 1, "bool": 1}
# candidate-visible tensors: their own allocation, GUARD bytes of guard on each side (host: whole
# PROT_NONE pages, so a read or write past either end faults; CUDA: poisoned bytes, checked)
GUARD = 1 << 16
GUARD_BYTE = 0x5a
ALIGN = 256
# calls on unseen inputs (fresh draws): FRESH_MIN..FRESH_MAX per evaluation, the first ones
# within min_samples, then one every FRESH_LATE repeated samples, at most 2 * FRESH_MAX
FRESH_MIN = 2
FRESH_MAX = 8
FRESH_LATE = 16
# a candidate is rejected when its fastest time on unseen inputs exceeds UNSEEN_RATIO times its
# fastest on repeated inputs drawn again the same way (control), or MAIN_RATIO times its fastest
# on repeated inputs timed as the sampling times them (plain), by UNSEEN_FLOOR_US at least, and
# the median of the sample-by-sample ratios exceeds the same factor (Unseen.suspect), twice:
# on the scheduled samples, and on a confirmation round of CONFIRM_PAIRS more (plain, control,
# unseen) triples (class Unseen)
UNSEEN_RATIO = 1.5
MAIN_RATIO = 3.0
UNSEEN_FLOOR_US = 2.0
HOST_PAUSE_S = 0.001
CONFIRM_PAIRS = 6
# work left on the device after a timed window (CUDA): a ModelNew that launches on a stream of
# its own and does not make the current stream wait for it would be timed without that work.
# After each window the worker waits for the whole device and measures the wait, then waits
# once more (the device idle now: the control, taken under the same host load). Rejected when
# the median of (wait - control) is over TAIL_FLOOR_US and over TAIL_SHARE of the median window
# (untimed_work)
TAIL_FLOOR_US = 20.0
TAIL_SHARE = 0.5
TAIL_MIN = 3  # samples at least
# speed of light (CUDA, flushed tiers): no time below the bytes a correct kernel must move at
# SOL_MARGIN times the device-to-device copy bandwidth probed once per worker
SOL_MARGIN = 1.5
SOL_PROBE_BYTES = 512 << 20
# exit codes, as enum kb_exit of common/include/kb/error.h (docs/cli.md "Exit codes")
EXIT_USAGE = 2    # bad command line
EXIT_CONFINE = 7  # the confinement library cannot be loaded
EXIT_DEVICE = 8   # no such CUDA device
EXIT_BLOCKED = 159  # a blocked call (KB__SANDBOX_EXIT_BLOCKED, runner/sandbox/proto.h)
SELF_DIR = os.path.dirname(os.path.abspath(__file__))
CONFINE_LIB = "libkb-confine.so"

torch = None
DEV = None  # the torch.device
STREAM = None  # torch.cuda.Stream of the candidate (cuda)
CUDART = None  # libcudart through ctypes (cuda): the L2 persisting window's reset
CONF = None  # the Confinement
# descriptors 0, 1 and 2 -> the worker's own copy of each (setup), to put them back after a
# candidate pointed them elsewhere (process_settings)
STD_FDS = {}
# the signals the worker ignores (setup)
IGNORED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)


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


def send(sock, nonce, msg):
    """Sends `msg` with the request's `nonce` (None: none): the runner takes a reply without
    its request's nonce for one candidate code wrote on the socket (docs/sandbox.md,
    "Framing"). The nonce lives only in serve()'s frame, out of candidate code's reach."""
    if nonce is not None:
        msg["nonce"] = nonce
    data = json.dumps(msg, allow_nan=False).encode()
    sock.sendall(struct.pack(">I", len(data)) + data)


# ---- process set-up ---------------------------------------------------------------------------

def first_to_die():
    """The OOM killer's first choice (oom_score_adj 1000), as kb-sandbox's confined process: a
    candidate that exhausts the node's memory ends its own evaluation (a crash), not the runner,
    the trusted worker or Redis, which it could otherwise pick for their size."""
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError as e:
        print("kb_sandbox_torch: cannot set its oom_score_adj: %s" % e, file=sys.stderr)


def setup(args):
    """Mirrors kb-sandbox's set-up: protocol off fds 0/1, other fds closed, signals, no core."""
    try:
        libc = ctypes.CDLL(None)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if args["parent"] > 0 and os.getppid() != args["parent"]:
        sys.exit(1)
    for s in IGNORED_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_CORE, (1, 1))  # 1 byte: no core, not even piped (confine.c)
    if not args["trusted"]:
        first_to_die()
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
    for fd in (0, 1, 2):
        STD_FDS[fd] = os.dup(fd)
    if args["dir"]:
        os.chdir(args["dir"])
    return socket.socket(fileno=proto)


# The objects whose code the worker holds to what it was once confined (Confinement.code_sum):
# the interpreter (the program, or libpython where it is shared: time.perf_counter), the C
# library and the vDSO (clock_gettime), ctypes' libffi and _ctypes (the calls into a library).
# torch's own libraries are not summed (hundreds of megabytes): torch eager's time is held
# by the witness's comparison with the trusted worker (eager_held).
CODE_OBJECTS = b"[main]:libpython:libc.so:linux-vdso:libffi:_ctypes"


class Confinement:
    """libkb-confine.so's kb_confine_python(), applied once, before the first candidate library
    is loaded (after CUDA is initialised: the context, the libraries, the device nodes are open
    by then). The library is loaded at start so that its absence is a start failure."""

    def __init__(self, args):
        self.lib = None
        self.done = False
        self.code = None  # code_sum() once confined, before the first candidate library
        self.trusted = args["trusted"]
        self.rw = os.path.abspath(args["dir"] or os.getcwd())
        self.ro = [os.path.abspath(p) for p in args["ro"]]
        self.note = ""
        if self.trusted:
            self.note = "trusted worker: times torch only, loads no candidate, not confined"
            return
        path = os.path.join(SELF_DIR, CONFINE_LIB)
        try:
            self.lib = ctypes.CDLL(path)
            self.lib.kb_confine_python.restype = ctypes.c_int
            self.lib.kb_confine_python.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                                                   ctypes.c_char_p, ctypes.c_size_t]
            self.lib.kb_confine_level.restype = ctypes.c_char_p
            self.lib.kb_confine_level.argtypes = []
            self.lib.kb_confine_landlock_abi.restype = ctypes.c_int
            self.lib.kb_confine_landlock_abi.argtypes = []
            self.lib.kb_confine_code_sum.restype = ctypes.c_int
            self.lib.kb_confine_code_sum.argtypes = [ctypes.c_char_p,
                                                     ctypes.POINTER(ctypes.c_uint64)]
        except (OSError, AttributeError) as e:
            self.lib = None
            if os.environ.get("KB_CONFINE_OPTIONAL") != "1":
                print("kb_sandbox_torch: cannot load the confinement library %s: %s (the worker "
                      "does not run candidates unconfined; KB_CONFINE_OPTIONAL=1 allows it)"
                      % (path, first_line(e)), file=sys.stderr)
                sys.exit(EXIT_CONFINE)
            self.note = "unconfined: %s not loaded (KB_CONFINE_OPTIONAL=1): %s" % (
                CONFINE_LIB, first_line(e))

    def code_sum(self):
        """A checksum of the code of the interpreter, the C library, the vDSO and ctypes'
        libraries (CODE_OBJECTS: the worker's clocks and the calls into a candidate's library
        run there), or None without the library."""
        if self.lib is None:
            return None
        total = ctypes.c_uint64()
        self.lib.kb_confine_code_sum(CODE_OBJECTS, ctypes.byref(total))
        return total.value

    def code_changed(self):
        """What of CODE_OBJECTS' code changed since the worker was confined, or None. A C
        library loaded in this process can rewrite it and put the protection back:
        relu_text_patch.c rewrote the C library's clock_gettime to return the time divided by
        40, ok at screen at 33.5 us a call for its 1374 us, and the honest relu_honest.c after
        it in that worker was timed at 33.3 us, before 2026-12-07 (kb-sandbox's check of its
        own code: docs/sandbox.md, "Between candidates")."""
        if self.code is None or self.code_sum() == self.code:
            return None
        return ("changed the worker's own process: the code of the interpreter, the C library "
                "or the vDSO changed (a clock the worker reads runs there); the worker restarts")

    def describe(self):
        """The hello's "confinement": the level reached once confined, before that the level
        it will apply."""
        if self.lib is None:
            return {"level": "none", "seccomp": False, "landlock_abi": 0, "note": self.note}
        abi = int(self.lib.kb_confine_landlock_abi())
        if self.done:
            level = (self.lib.kb_confine_level() or b"none").decode()
        else:
            level = "seccomp+landlock" if abi > 0 else "seccomp"
        note = self.note or ("" if abi > 0 else "landlock unavailable: kernel too old")
        if not self.done:
            note = ("will confine before the first candidate is loaded" +
                    ("; " + note if note else ""))
        return {"level": level, "seccomp": level != "none", "landlock_abi": abi, "note": note}

    def apply(self):
        """Confines the process (once). Raises Failure when the library refuses."""
        if self.done or self.lib is None:
            return
        warm_up()
        record_probes()
        ro = readable_paths(self.ro)
        why = ctypes.create_string_buffer(512)
        rc = self.lib.kb_confine_python(self.rw.encode(), ":".join(ro).encode(), why,
                                        ctypes.sizeof(why))
        if rc != 0:
            raise Failure("cannot confine the worker: %s" % why.value.decode(errors="replace"))
        self.done = True
        self.code = self.code_sum()
        answer_probes()
        trust_paths()
        sys.addaudithook(refuse_processes)
        sys.addaudithook(refuse_introspection)


# The commands libraries run to learn about the machine after the worker is confined, each
# as the exact argument list they pass to subprocess.check_output: torch's repro writer
# (torch._dynamo.debug_utils, `nvcc --version`, after a compile that failed or recompiled:
# measured on the H200 under torch 2.11, VanillaRNN's compile seed) and Triton's driver
# (`ldconfig -p`, where TRITON_LIBCUDA_PATH is not read), and the standard library's platform
# module (`file -b <python>` for platform.architecture(), which Triton's build calls, and
# `uname -p` for platform.processor()). Each is run once before confinement
# (record_probes) and its answer replayed after it (answer_probes): no process is started,
# and whoever asks (a library or the candidate) learns only what the recording says. Any other
# process start still ends the worker by refuse_processes, named.
def python_file():
    """The argument list platform.architecture() gives `file` for this interpreter (Python
    follows the symlinks first), as Triton's build asks it (measured on the H200, torch 2.11:
    triton/runtime/build.py calls platform.architecture())."""
    import platform
    follow = getattr(platform, "_follow_symlinks", os.path.realpath)
    return ("file", "-b", follow(sys.executable))


PROBES = (("nvcc", "--version"), ("/sbin/ldconfig", "-p"), ("ldconfig", "-p"), ("uname", "-p"),
          python_file())
PROBE_ANSWERS = {}  # argv tuple -> (exit status, stdout bytes), or None: the command is missing


def record_probes():
    """Runs each of PROBES (stdout kept, stderr dropped, 10 s each) into PROBE_ANSWERS, once."""
    if PROBE_ANSWERS:
        return
    import subprocess
    for argv in PROBES:
        try:
            p = subprocess.run(list(argv), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               stdin=subprocess.DEVNULL, timeout=10,
                               env=dict(os.environ, LC_ALL="C"))  # as platform asks file
            PROBE_ANSWERS[argv] = (p.returncode, p.stdout)
        except (OSError, subprocess.SubprocessError):
            PROBE_ANSWERS[argv] = None


def answer_probes():
    """subprocess.check_output answers the exact argument lists of PROBE_ANSWERS from the
    recording, as the command would have: its output (text when asked for text), a
    CalledProcessError for a non-zero exit status, FileNotFoundError for a missing command.
    Every other call goes to the real one (and so to the audit hook)."""
    import errno
    import subprocess
    real = subprocess.check_output

    def check_output(*popenargs, **kwargs):
        argv = popenargs[0] if len(popenargs) == 1 else kwargs.get("args")
        key = tuple(argv) if (isinstance(argv, (list, tuple)) and
                              all(isinstance(a, str) for a in argv)) else None
        if (key not in PROBE_ANSWERS or kwargs.get("shell") or kwargs.get("input") is not None
                or (len(popenargs) != 1 and "args" not in kwargs)):
            return real(*popenargs, **kwargs)
        answer = PROBE_ANSWERS[key]
        if answer is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), key[0])
        status, out = answer
        if status != 0:
            raise subprocess.CalledProcessError(status, list(key), output=out)
        if (kwargs.get("text") or kwargs.get("universal_newlines") or kwargs.get("encoding")
                or kwargs.get("errors")):
            return out.decode(kwargs.get("encoding") or "utf-8", kwargs.get("errors") or "strict")
        return out

    subprocess.check_output = check_output


# Python's audit events that start a process (or replace this one), and the system call each
# would make: the seccomp filter traps that call, but Python's subprocess blocks every signal
# around its fork (vfork, posix_spawn the same), and a trapped call with SIGSYS blocked ends
# the process by SIGSYS before its handler can name the call (measured on the H200: Triton,
# under torch.compile, asked `ptxas --version` so, and the worker died with no line)
PROCESS_EVENTS = {"subprocess.Popen": "clone", "os.posix_spawn": "clone", "os.spawn": "clone",
                  "os.fork": "fork", "os.forkpty": "fork", "os.system": "execve",
                  "os.exec": "execve", "pty.spawn": "clone", "os.startfile": "execve"}


# Candidate code reaching into the interpreter for the evaluator's own objects: a frame (the
# evaluation's locals: its timer, its run, the prepared tasks with their references) or the
# garbage collector's view of every object. Measured before this guard: a ModelNew that moved
# the start of the CPU timer it found through sys._getframe(1).f_back... was ok at the full
# tier, 13.9 us against plain torch.relu's 48.8 us (on CUDA it could record the start event
# again). Each event is refused (PermissionError) and recorded when the first frame above it
# that is not the standard library's is neither a library's (site-packages: torch's own
# dynamo, Triton, logging from torch) nor the worker's nor the task's reference: the
# candidate's file, whatever it imported from its own folder. A few standard modules read a
# caller's frame for its module name only (namedtuple, typing, enum, dataclasses, the Python
# warnings): called from them it is allowed. The verdict is the Surface's (Surface.changed).
INTROSPECTION_EVENTS = frozenset((
    "sys._getframe", "sys._getframemodulename", "sys._current_frames", "sys.setprofile",
    "sys.settrace", "sys.addaudithook", "gc.get_objects", "gc.get_referrers",
    "gc.get_referents"))
FRAME_ATTRIBUTES = frozenset(("tb_frame", "gi_frame", "cr_frame", "ag_frame"))
NAME_ONLY_CALLERS = frozenset(("collections/__init__.py", "typing.py", "enum.py",
                               "dataclasses.py", "warnings.py"))
TRUSTED = {"libs": (), "stdlib": (), "files": set(),  # set by trust_paths() at confinement
           "never": ()}  # the candidates' build folders: untrusted whatever contains them
INTROSPECTION = []  # what candidate code reached for ("sys._getframe from candidate.py:17")
_IN_HOOK = [False]


def trust_paths():
    """Fills TRUSTED: the libraries' folders (site-packages, dist-packages), the standard
    library's, this file (the tasks' reference files are added as they are prepared)."""
    import site
    import sysconfig
    if not TRUSTED["stdlib"]:
        paths = sysconfig.get_paths()
        stdlib = tuple(os.path.join(os.path.realpath(p), "") for p in
                       set(paths.get(k) for k in ("stdlib", "platstdlib") if paths.get(k)))
        libs = set(paths.get(k) for k in ("purelib", "platlib") if paths.get(k))
        libs.update(getattr(site, "getsitepackages", lambda: [])())
        libs.update(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
        # and wherever the packages imported so far live (torch installed outside
        # site-packages, on a PYTHONPATH): no candidate code is loaded before confinement
        for name, mod in list(sys.modules.items()):
            f = getattr(mod, "__file__", None)
            if "." in name or name == "__main__" or not isinstance(f, str) or not f:
                continue
            f = os.path.realpath(f)
            root = os.path.dirname(os.path.dirname(f) if os.path.basename(f).startswith(
                "__init__.") else f)
            if not os.path.join(root, "").startswith(stdlib):
                libs.add(root)
        TRUSTED["libs"] = tuple(sorted(os.path.join(os.path.realpath(p), "") for p in libs
                                       if p and not os.path.join(os.path.realpath(p),
                                                                 "").startswith(stdlib)))
        TRUSTED["stdlib"] = stdlib
        TRUSTED["files"].add(os.path.realpath(os.path.abspath(__file__)))


def distrust(build):
    """Marks the folder that holds the build `build` (a candidate's, or a baseline's: the
    runner's compile cache) untrusted, whatever trusted folder contains it. Called before the
    evaluation's Surface is made, which then guards TRUSTED's contents."""
    if build:
        never = os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(build))), "")
        if never not in TRUSTED["never"]:
            TRUSTED["never"] = TRUSTED["never"] + (never,)


# a code object's file name -> its real path (introspection_source); lower case: its contents
# grow during evaluations, so the Surface does not hold them to their first value
_real_paths = {}


def real_path(path):
    """os.path.realpath of an absolute `path`, once per file name (torch's dynamo reads frames
    often while it compiles; each read is checked); any other name as it is."""
    real = _real_paths.get(path)
    if real is None:
        real = os.path.realpath(path) if path.startswith("/") else path
        _real_paths[path] = real
    return real


def trusted_file(real):
    """Whether the file of real path `real` is a library's, the worker's or a task reference's
    (TRUSTED), and not inside a candidate's build folder."""
    return not real.startswith(TRUSTED["never"]) and (real.startswith(TRUSTED["libs"]) or
                                                      real in TRUSTED["files"])


def introspection_source(frame):
    """Where untrusted code asked, or None. From `frame` (the audited call's caller) up: the
    first frame that is a library's, the worker's or the reference's makes it trusted (None);
    untrusted code with fewer than two standard-library frames below it asked for the frame or
    the objects itself, or through one helper that hands them back (inspect.currentframe,
    logging.currentframe, traceback.walk_stack): its file and line; deeper (logging's own
    findCaller under a candidate's logging.warning) the standard library asked for its own use.
    A module of NAME_ONLY_CALLERS as the caller is trusted: it reads a module name only."""
    stdlib = 0
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith("<frozen "):
            frame = frame.f_back
            continue
        real = real_path(path)
        if trusted_file(real):
            return None
        if real.startswith(TRUSTED["stdlib"]):
            if stdlib == 0 and real.endswith(tuple("/" + n for n in NAME_ONLY_CALLERS)):
                return None
            stdlib += 1
            frame = frame.f_back
            continue
        return "%s:%d" % (os.path.basename(path), frame.f_lineno) if stdlib < 2 else None
    return None


# events that make code under a file name of the caller's choosing: untrusted code could name a
# library's file (code.replace(co_filename=torch.__file__)) and pass as that library at the
# frame checks above (found 2026-12-06: a ModelNew got sys._getframe so); refused from
# untrusted code when the name is a trusted one (spoofed_name), marshal.loads always (the names
# are inside its bytes)
CODE_EVENTS = frozenset(("code.__new__", "function.__new__", "compile", "marshal.loads"))


def spoofed_name(event, args):
    """The trusted file name (a library's, the standard library's, the worker's or a reference's)
    that the code event `event` would give new code, or None."""
    if event == "marshal.loads":
        return "marshal.loads"
    if event in ("compile", "code.__new__"):  # (source or code bytes, file name, ...)
        name = args[1] if len(args) > 1 else None
    else:  # function.__new__: (code,)
        name = getattr(args[0], "co_filename", None) if args else None
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    if not isinstance(name, str) or not name.startswith("/"):
        return None
    real = real_path(name)
    if trusted_file(real) or (real.startswith(TRUSTED["stdlib"]) and
                              not real.startswith(TRUSTED["never"])):
        return name
    return None


def refuse_introspection(event, args):
    """Audit hook of the confined worker: refuses (and records in INTROSPECTION) the events
    above when untrusted code is behind them, and the code events (CODE_EVENTS) that would give
    untrusted code a trusted file name."""
    if _IN_HOOK[0]:
        return
    if event in CODE_EVENTS:
        named = spoofed_name(event, args)
        if named is None:
            return
    elif event not in INTROSPECTION_EVENTS and not (
            event == "object.__getattr__" and len(args) > 1 and args[1] in FRAME_ATTRIBUTES):
        return
    _IN_HOOK[0] = True
    try:
        frame = sys._getframe(1)
        # an import loading a module's code (importlib's own frames make it): the name is the
        # module file's
        importing = event in CODE_EVENTS and \
            frame.f_code.co_filename.startswith("<frozen importlib")
        where = None if importing else introspection_source(frame)
    finally:
        _IN_HOOK[0] = False
    if where is None:
        return
    if event in CODE_EVENTS:
        what = "%s of code named %s" % (event, named) if event != "marshal.loads" else event
        why = "make code under a library's file name"
    else:
        what = "the attribute %s" % args[1] if event == "object.__getattr__" else event
        why = "read the evaluator's frames or objects"
    INTROSPECTION.append("%s from %s" % (what, where))
    raise PermissionError("%s: a solution may not %s" % (what, why))


def refuse_processes(event, args):
    """Audit hook of the confined worker (added once confined; a hook cannot be removed): a
    process start from Python, the candidate's or a library's, ends the worker as the filter's
    handler would (KB_SANDBOX_EXIT_BLOCKED, the "blocked system call" line the runner reads),
    with what was started and where, before any signal is blocked."""
    call = PROCESS_EVENTS.get(event)
    if call is None:
        return
    what = args[1] if event == "subprocess.Popen" and len(args) > 1 else (args[0] if args else "")
    if isinstance(what, (list, tuple)):
        what = " ".join(str(a) for a in what[:6]) + (" ..." if len(what) > 6 else "")
    frames = []
    f = sys._getframe(1)
    while f is not None and len(frames) < 6:
        code = f.f_code
        base = os.path.basename(code.co_filename)
        if base not in ("subprocess.py", "os.py", "pty.py", "popen_fork.py", "popen_spawn.py"):
            frames.append("%s:%d %s" % (base, f.f_lineno, code.co_name))
        f = f.f_back
    handling = sys.exc_info()[1]  # a library's error path often starts the process
    also = "" if handling is None else "; while handling %s: %s" % (
        type(handling).__name__, first_line(handling)[:300])
    # the runner keeps 256 characters of its reason: what, then why, then where
    line = ("kb-sandbox: blocked system call %s (the worker tried to start a process: %s: %s%s; "
            "from %s)\n" % (call, event, str(what)[:160], also, " < ".join(frames)))
    try:
        os.write(2, line.encode("utf-8", "replace"))
    finally:
        os._exit(EXIT_BLOCKED)


def readable_paths(extra):
    """The files and folders the confined worker reads (measured with strace -f -e trace=%file
    on torch 1.13, docs/sandbox.md): the interpreter's prefix, its standard library and package
    folders (sys.path), torch's package folder, the folder of every library mapped now, the
    dynamic loader's folders and cache (the candidate's own dependencies load after), the CUDA
    toolkit's libraries, /proc/self (torch and the loader read its maps and status), the CPU
    topology in /sys, and the runner's --ro paths (its build cache and task sources). Existing
    paths only, no duplicates, none holding ':'."""
    import sysconfig
    want = [sys.prefix, sys.exec_prefix, sys.base_prefix]
    for k in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            want.append(sysconfig.get_path(k))
        except KeyError:
            pass
    want += [p for p in sys.path if p]
    want.append(os.path.dirname(torch.__file__))
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and parts[5].startswith("/"):
                    want.append(os.path.dirname(parts[5].strip()))
    except OSError:
        pass
    want += ["/etc/ld.so.cache", "/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib"]
    want += [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p]
    want += ld_conf_dirs("/etc/ld.so.conf", 0)
    for cuda in ("/usr/local/cuda", os.environ.get("CUDA_HOME", "")):
        if cuda:
            want += [os.path.join(cuda, "lib64"), os.path.join(cuda, "targets")]
    want += ["/proc/self", "/sys/devices/system/cpu"]
    if DEV is not None and DEV.type == "cuda":
        want += ["/proc/driver/nvidia"]
    want += extra
    out = []
    seen = set(["/"])  # never the whole tree, nor the user's home folder
    try:
        import pwd
        seen.add(os.path.realpath(pwd.getpwuid(os.getuid()).pw_dir))
    except (ImportError, KeyError):
        pass
    for p in want:
        for q in (os.path.abspath(p), os.path.realpath(p)):
            if q in seen or ":" in q or not os.path.exists(q):
                continue
            seen.add(q)
            out.append(q)
    return out


def ld_conf_dirs(path, depth):
    """The folders /etc/ld.so.conf lists (include lines followed, 4 deep)."""
    import glob
    out = []
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return out
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("include") and depth < 4:
            pattern = line.split(None, 1)[1] if len(line.split(None, 1)) > 1 else ""
            if not os.path.isabs(pattern):
                pattern = os.path.join(os.path.dirname(path), pattern)
            for inc in sorted(glob.glob(pattern)):
                out += ld_conf_dirs(inc, depth + 1)
        elif line.startswith("/"):
            out.append(line)
    return out


def warm_up():
    """Loads before confinement what the evaluation would otherwise load lazily: the modules
    the worker imports on the way (json's encoders, glob, sysconfig), torch's lazily imported
    parts an evaluation touches, one of each tensor operation it runs (allocation, fill, copy,
    comparison, reductions, the generator), and on CUDA the events and the spin kernel."""
    import glob  # noqa: F401
    import sysconfig  # noqa: F401
    x = torch.arange(64, dtype=torch.float32, device=DEV)
    y = torch.empty_like(x)
    y.copy_(x)
    g = torch.Generator(device=DEV)
    g.manual_seed(1)
    y.uniform_(0, 1, generator=g)
    y.normal_(0, 1, generator=g)
    torch.randn(8, device=DEV)
    torch.rand(8, device=DEV)
    torch.randint(0, 4, (8,), device=DEV)
    z = (x.to(torch.float64) - y.to(torch.float64)).abs()
    bool(torch.isfinite(z).all())
    bool(((z == z) | torch.isnan(z)).any())
    int((z > 0).sum())
    (z > 1).nonzero()
    x.view(torch.int32).to(torch.int64).sum()
    torch.bitwise_xor(x.view(torch.int32), x.view(torch.int32))
    torch.equal(x, y)
    if DEV.type == "cuda":
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record(STREAM)
        torch.cuda._sleep(1000)
        e1.record(STREAM)
        e1.synchronize()
        e0.elapsed_time(e1)
    sync()


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
    global torch, DEV, STREAM, CUDART
    import torch as torch_module
    torch = torch_module
    if backend == "host":
        DEV = torch.device("cpu")
        return
    if not torch.cuda.is_available() or ordinal >= torch.cuda.device_count():
        print("kb_sandbox_torch: no CUDA device %d (torch %s sees %d)" %
              (ordinal, torch.__version__, torch.cuda.device_count() if torch.cuda.is_available()
               else 0), file=sys.stderr)
        sys.exit(EXIT_DEVICE)
    torch.cuda.set_device(ordinal)
    strict_f32(torch)
    DEV = torch.device("cuda", ordinal)
    STREAM = torch.cuda.Stream(device=DEV)
    # every torch operation of this process (draws, poisoning, flushes, checks, the module) goes
    # on the candidate's stream, ordered with its kernels: the stream does not synchronize with
    # the legacy default stream
    torch.cuda.set_stream(STREAM)
    CUDART = find_cudart()
    if CUDART is not None:
        CUDART.cudaSetDevice(ordinal)  # a runtime instance of its own starts on device 0
        CUDART.cudaGetLastError()


def strict_f32(torch_module):
    """TF32 off for matmuls and cuDNN in the whole process: the reference, every candidate's torch
    operations (a ModelNew that calls the reference's own operators must give its outputs) and
    torch eager / torch.compile timing all run in strict f32 (cuDNN's default would use TF32 for
    convolutions: about 1e-3 relative error, over the f32 tolerance)."""
    torch_module.backends.cuda.matmul.allow_tf32 = False
    torch_module.backends.cudnn.allow_tf32 = False
    torch_module.set_float32_matmul_precision("highest")


def find_cudart():
    """libcudart through ctypes (the one torch mapped, else the loader's), for the L2
    persisting window's reset; None when there is none (the reset is then skipped)."""
    names = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and "/libcudart" in parts[5]:
                    names.append(parts[5].strip())
    except OSError:
        pass
    names += ["libcudart.so", "libcudart.so.13", "libcudart.so.12"]
    for name in names:
        try:
            lib = ctypes.CDLL(name)
            lib.cudaCtxResetPersistingL2Cache.restype = ctypes.c_int
            lib.cudaDeviceSetLimit.restype = ctypes.c_int
            lib.cudaDeviceSetLimit.argtypes = [ctypes.c_int, ctypes.c_size_t]
            lib.cudaStreamSetAttribute.restype = ctypes.c_int
            lib.cudaStreamSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                                   ctypes.c_void_p]
            lib.cudaGetLastError.restype = ctypes.c_int
            return lib
        except (OSError, AttributeError):
            continue
    return None


L2_WINDOW_OFF = ctypes.create_string_buffer(128)  # a zeroed cudaStreamAttrValue: no window


def reset_l2_persistence():
    """Before every timed sample (CUDA): every persisting L2 line back to normal, the
    persisting carve-out to 0 (cudaLimitPersistingL2CacheSize = 0x06) and the candidate's
    stream's access policy window (cudaStreamAttributeAccessPolicyWindow = 1) cleared. Errors
    are cleared from the runtime's last error (torch checks it after its launches)."""
    if CUDART is None or STREAM is None:
        return
    CUDART.cudaCtxResetPersistingL2Cache()
    CUDART.cudaDeviceSetLimit(0x06, 0)
    CUDART.cudaStreamSetAttribute(ctypes.c_void_p(STREAM.cuda_stream), 1, L2_WINDOW_OFF)
    CUDART.cudaGetLastError()


def hello(backend, ordinal):
    msg = {"op": "hello", "pid": os.getpid(), "backend": backend, "ordinal": ordinal,
           "worker": "pytorch", "torch": torch.__version__, "cc": "0.0", "sm_count": 0,
           "mem_bytes": 0, "l2_bytes": 0, "runtime": 0, "driver": 0,
           "trusted": CONF.trusted, "confinement": CONF.describe()}
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
    """Two wrapping int64 sums over the tensor's bytes, as int32 words where they fit: the words'
    sum, and their sum weighted by position (within a chunk by 1..CHUNK, each product wrapping
    at 32 bits, plus the chunk's offset times its sum). Summed on the tensor's device into int64
    without an int64 copy of the data, one wait for the host at the end (the int64 copy, the
    int64 weights and two waits per chunk before: 5.4 s against 2.9 s for 1 GiB on this CPU)."""
    flat = t.reshape(-1).contiguous().view(torch.uint8)  # a strided view has no byte view
    if flat.numel() % 4 == 0:
        flat = flat.view(torch.int32)
    n = flat.numel()
    w = torch.arange(1, min(CHUNK, n) + 1, dtype=torch.int32, device=flat.device)
    s1 = torch.zeros((), dtype=torch.int64, device=flat.device)
    s2 = torch.zeros((), dtype=torch.int64, device=flat.device)
    for at in range(0, n, CHUNK):
        c = flat[at:at + CHUNK]
        if c.dtype != torch.int32:  # bytes: small tensors of an odd size
            c = c.to(torch.int32)
        a = c.sum(dtype=torch.int64)
        s1 += a
        s2 += (c * w[:c.numel()]).sum(dtype=torch.int64) + a * at
    return (int(s1) & (2**64 - 1), int(s2) & (2**64 - 1))


def compare(got, ref, dtype, atol, rtol, secret=None):
    """kb__verify's rule, and where the reference is not finite (a task file's log(x) of
    normal inputs: NaN; exp(100 x): inf) the same value: NaN for NaN, the same infinity. `ref`
    is masked (its flat integer view, mask_) when `secret` is given. The float64 temporaries
    that hold reference values are zeroed before they are freed.
    Returns (bad, checked, first_bad, got, expected, max_abs, max_rel)."""
    g = got.reshape(-1)
    e = ref.reshape(-1)
    n = g.numel()
    bad = 0
    first = -1
    fg = fe = 0.0
    max_abs = 0.0
    max_rel = 0.0
    for at in range(0, n, CHUNK):
        m = min(CHUNK, n - at)
        ep = unmasked_chunk(e, at, m, secret, dtype) if secret is not None else e[at:at + m]
        if dtype == "bool":
            gc = g[at:at + m].view(torch.uint8).to(torch.float64)
            ec = ep.view(torch.uint8).to(torch.float64)
        else:
            gc = g[at:at + m].to(torch.float64)
            # a copy even of an f64 reference: ep is zeroed below and ec at the end, and for
            # f64 .to() would return ep itself (the masked path then compared with zeros, the
            # unmasked one zeroed the caller's tensor: every f64 identity was wrong_output)
            ec = ep.to(torch.float64, copy=True)
        # i64 beyond 2^53 rounds in float64 (x * 1000003 of values near 2^42: a result off by
        # one compared equal), so, as kb__verify, different values never differ by 0
        differ = g[at:at + m] != ep if dtype == "i64" else None
        if secret is not None:
            ep.view(-1).view(torch.uint8).zero_()
        fin = torch.isfinite(gc) & torch.isfinite(ec)
        diff = (gc - ec).abs()
        if differ is not None:
            diff.masked_fill_(differ.logical_and_(diff == 0), 1.0)
            del differ
        lim = ec.abs()
        ok = fin & (diff <= lim.mul_(rtol).add_(atol))
        nonfinite = torch.isfinite(ec).logical_not_()
        if bool(nonfinite.any()):  # a few bool temporaries, for a chunk that has such elements
            same = torch.eq(gc, ec)  # the same infinity
            same |= torch.isnan(gc).logical_and_(torch.isnan(ec))
            ok |= same.logical_and_(nonfinite)
            del same
        del nonfinite
        if dtype == "bool":
            ok = ok & (gc <= 1)
        nb = int((~ok).sum())
        if fin.any():
            max_abs = max(max_abs, float(diff[fin].max()))
            nz = fin & (ec != 0)
            if nz.any():
                lim.copy_(ec).abs_()
                max_rel = max(max_rel, float(diff.div_(lim)[nz].max()))
        if nb and first < 0:
            i = int((~ok).nonzero()[0][0])
            first = at + i
            fg, fe = float(gc[i]), float(ec[i])
            if dtype == "i64":  # exact: float64 prints both sides of an off-by-one alike
                fg = int(g[first])
                fe = int(unmasked_chunk(e, first, 1, secret, dtype)[0] if secret is not None
                         else e[first])
        bad += nb
        for t in (ec, diff, lim):
            t.zero_()
    return bad, n, first, fg, fe, max_abs, max_rel


def describe(bad, checked, first, g, e):
    return "element %d is %s, expected %s (%d of %d bad)" % (first, fmt(g), fmt(e), bad, checked)


def fmt(x):
    if isinstance(x, int):
        return str(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return "%.9g" % x


# ---- the task ---------------------------------------------------------------------------------

class Failure(Exception):
    """prepare cannot make the task (the oracle is trusted: the runner reports infra_error)."""


# every Task not yet freed: the "release" reply counts them ("tasks_alive"), so that a task
# dropped but still held somewhere (its input sets, references and outputs on the device) shows
TASKS_ALIVE = weakref.WeakSet()


class Task:
    def __init__(self):
        TASKS_ALIVE.add(self)


def exec_reference(path):
    """The task file at `path` run as a module: its namespace, or Failure. It runs with the
    generators seeded (MODEL_SEED), as a ModelNew file is (ModuleCandidate) and the compile
    tier runs both (kb_build_modelnew.run_file): a tensor the file draws at module level (a
    constant forward() uses, a tensor get_inputs() returns) has the same values in every
    process and in the identity seed, which is the task file again. Unseeded, the identity of
    `PROJ = torch.randn(64, 32)` was wrong_output, and a module-level tensor returned by
    get_inputs() was rejected by the witness (drawn again in the trusted process)."""
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise Failure("cannot read the oracle %s: %s" % (path, e))
    ns = {"__name__": "kb_reference", "__file__": path}
    try:
        seed_all(MODEL_SEED)
        exec(compile(source, path, "exec"), ns)
    except Exception as e:
        raise Failure("the oracle %s raised %s: %s" % (os.path.basename(path), type(e).__name__, e))
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if name not in ns:
            raise Failure("the oracle %s has no %s" % (os.path.basename(path), name))
    return ns


# torch's tensor factories a task file may name a device in (device="cuda"); on the host that
# device becomes the CPU (on_device)
FACTORIES = ("arange", "as_tensor", "empty", "empty_like", "eye", "full", "full_like",
             "linspace", "logspace", "normal", "ones", "ones_like", "rand", "rand_like", "randint",
             "randint_like", "randn", "randn_like", "randperm", "tensor", "zeros", "zeros_like")


def on_cpu(x):
    """`x` with a device it names (a string or a torch.device other than the CPU) made "cpu"."""
    if isinstance(x, torch.device) or (isinstance(x, str) and x.split(":")[0] in
                                       ("cuda", "mps", "xpu", "meta")):
        return torch.device("cpu")
    return x


class on_device:
    """Factories make tensors on the task's device (torch >= 2.0); on the host a task file that
    makes its tensors on "cuda" (.cuda(), .to("cuda"), device="cuda" to a factory) gets them on
    the CPU: the file runs as written on either backend. What it replaces is put back on exit."""

    def __enter__(self):
        self.ctx = None
        self.saved = []  # (owner, name, original)
        if DEV.type == "cuda" and hasattr(torch.device, "__enter__"):
            self.ctx = torch.device(DEV)
            self.ctx.__enter__()
        elif DEV.type == "cpu":
            to = torch.Tensor.to

            def stay(t, *args, **kwargs):
                args = tuple(on_cpu(a) for a in args)
                if "device" in kwargs:
                    kwargs["device"] = on_cpu(kwargs["device"])
                return to(t, *args, **kwargs)
            self.put(torch.Tensor, "cuda", lambda t, *a, **k: t)
            self.put(torch.Tensor, "to", stay)
            for name in FACTORIES:
                fn = getattr(torch, name, None)
                if fn is not None:
                    self.put(torch, name, self.factory(fn))
        return self

    @staticmethod
    def factory(fn):
        def made(*args, **kwargs):
            if "device" in kwargs:
                kwargs["device"] = on_cpu(kwargs["device"])
            return fn(*args, **kwargs)
        return made

    def put(self, owner, name, fn):
        """Replaces `owner`'s `name` until exit; an attribute a class inherits (Tensor.cuda is
        torch._C's) is removed again rather than set."""
        own = vars(owner)
        self.saved.append((owner, name, own[name] if name in own else MISSING))
        setattr(owner, name, fn)

    def __exit__(self, *exc):
        if self.ctx is not None:
            self.ctx.__exit__(*exc)
        for owner, name, fn in reversed(self.saved):
            if fn is MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, fn)
        return False


def draw(task, k, s=None):
    """The inputs of set k (new tensors on the device, contiguous); with `s`, those of the set
    `s` (a set's description: seed, distribution, low, high) in set k's place."""
    if s is None:
        s = task.sets[k]
    seed_all(s["seed"])
    with on_device():
        got = task.ns["get_inputs"]()
    if not isinstance(got, (list, tuple)) or not all(
            isinstance(t, (torch.Tensor,) + tuple(SCALARS)) for t in got):
        raise Failure("get_inputs() must return a list of tensors and Python numbers")
    task.scalars = [i for i, t in enumerate(got) if not isinstance(t, torch.Tensor)]
    got = [scalar_tensor(t) if not isinstance(t, torch.Tensor) else t.to(DEV).contiguous()
           for t in got]
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
        if i >= n_fwd or standard(s) or i in task.scalars:
            continue
        g = torch.Generator(device=DEV)
        g.manual_seed((s["seed"] * 1000003 + i) % (2**63))
        if spec["dtype"] in FLOATS or (s["distribution"] == "integers" and
                                       spec["dtype"] != "bool"):
            fill(t, s, g)
    return got


def fill(t, s, g):
    """Draws set `s`'s distribution into `t` (contiguous) from generator `g`: with torch's
    in-place draw in t's dtype where that takes the bounds, else (bounds past the dtype: f16
    uniform [-1e30, 1e30), integers in [-1e9, 1e9) for f16 or u8, [0, 1e12) for i32) in
    float64 or int64, CHUNK elements at a time, each value stored as kb-sandbox stores it
    (runner/sandbox/inputs.c): rounded to a float dtype (an overflow an infinity), clamped to an
    integer dtype's range. task.json allows bounds up to 1e300, and kb-sandbox draws any of
    them; torch's draws refuse such bounds ("from is out of bounds for c10::Half"), and such a
    task was never prepared: every candidate infra_error."""
    dist, low, high = s["distribution"], s["low"], s["high"]
    if dist == "integers":  # kb-sandbox draws from ceil(low) up to ceil(high), exclusive
        low, high = math.ceil(low), math.ceil(high)
    if t.dtype.is_floating_point:  # what torch's own draws take (else they raise or warn)
        exact = 2 ** {torch.float16: 11, torch.bfloat16: 8, torch.float32: 24}.get(t.dtype, 53)
        big = torch.finfo(t.dtype).max
        native = dist == "normal" or (dist == "uniform" and -big <= low and high <= big) or \
            (dist == "integers" and -exact <= low and high <= exact)
    else:
        lim = torch.iinfo(t.dtype)
        native = lim.min <= low and high - 1 <= lim.max
    if native:
        if dist == "normal":
            t.normal_(low, high, generator=g)
        elif dist == "uniform":
            t.uniform_(low, high, generator=g)
        else:
            t.random_(low, high, generator=g)
        return
    flat = t.view(-1)
    wide = torch.int64 if dist == "integers" else torch.float64
    lim = None if t.dtype.is_floating_point else torch.iinfo(t.dtype)
    for at in range(0, flat.numel(), CHUNK):
        v = torch.empty(min(CHUNK, flat.numel() - at), dtype=wide, device=t.device)
        if dist == "normal":
            v.normal_(low, high, generator=g)
        elif dist == "uniform":
            v.uniform_(low, high, generator=g)
        else:
            v.random_(low, high, generator=g)
        if lim is not None:
            v = v.floor_() if v.is_floating_point() else v
            v.clamp_(lim.min, lim.max)
        flat[at:at + v.numel()].copy_(v)
        del v


# Python scalars among get_inputs() (a float scale, an int dim, a bool flag): the candidate gets a
# 0-d tensor of this dtype (the importer lists it so), the module the Python value itself
SCALARS = {bool: "bool", int: "i64", float: "f32"}


def scalar_tensor(v):
    """A Python scalar of get_inputs() as a 0-d tensor on the device; the value it came from
    stays on it as `kb_scalar` (bool before int: a bool is an int to isinstance)."""
    kind = bool if isinstance(v, bool) else int if isinstance(v, int) else float
    t = torch.tensor(kind(v), dtype=torch_dtype(SCALARS[kind]), device=DEV)
    t.kb_scalar = kind(v)
    return t


def forward_args(task, inputs):
    """The module's forward() arguments from a set's `inputs`: without the parameters, with the
    Python value in place of each scalar's 0-d tensor."""
    args = inputs[:len(inputs) - len(task.params)]
    if not task.scalars:
        return args
    args = list(args)
    for i in task.scalars:
        t = args[i]
        v = getattr(t, "kb_scalar", None)
        args[i] = v if v is not None else type(t.item())(t.item())
    return args


def seed_all(seed):
    """torch.manual_seed, but on the host only the CPU generator: there torch.manual_seed also
    queues a CUDA seeding for later, with a formatted stack (reading the sources of every frame)
    each time, which would grow for as long as the worker lives."""
    if DEV.type == "cpu":
        torch.default_generator.manual_seed(seed)
    else:
        torch.manual_seed(seed)
    # the generators a task file may draw from besides torch's (random.randint in
    # get_inputs(), np.random.randn in forward()): the same draws each time too
    py_random.seed(seed)
    np = sys.modules.get("numpy")
    if np is not None:
        np.random.seed(seed % 2**32)


def host_rng_state():
    """The state of Python's random and, once something imported NumPy, of NumPy's global
    generator, comparable with ==: a forward() that changes it draws random numbers outside
    torch (reference())."""
    state = [py_random.getstate()]
    np = sys.modules.get("numpy")
    if np is not None:
        try:
            st = np.random.get_state()
            state.append((st[1].tobytes(), st[2], st[3], st[4]))
        except Exception:  # a NumPy without the legacy state
            pass
    return state


def standard(s):
    """True for the sets the importer writes (normal (0, 1) or uniform [0, 1), what randn and
    rand draw): get_inputs()'s own values are kept, so structured inputs (triangular or
    symmetric matrices, softmax rows, +-1 targets) stay what the task file makes."""
    return s["distribution"] in ("normal", "uniform") and s["low"] == 0 and s["high"] == 1


def run_module(module, inputs):
    with torch.no_grad():
        out = module(*inputs)
    return list(out) if isinstance(out, (list, tuple)) else [out]


# The generator seed before every reference call and every ModelNew call of a task whose
# forward() draws random numbers (a dropout in training mode: KernelBench level 2's 66 and 83):
# a candidate that draws the same numbers in the same order (the identity) matches.
RANDOM_SEED = 1234


def random_ops(module, args):
    """module(*args) under no_grad, noting the aten operators it calls that torch tags
    nondeterministic_seeded: (outputs as run_module gives them, the operators' names). Where
    this torch has no python dispatch mode, (outputs, [])."""
    try:
        from torch.utils._python_dispatch import TorchDispatchMode
        seeded = torch.Tag.nondeterministic_seeded
    except (ImportError, AttributeError):
        return run_module(module, args), []
    seen = []

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, a=(), kw=None):
            if seeded in getattr(func, "tags", ()) and func._schema.name not in seen:
                seen.append(func._schema.name)
            return func(*a, **(kw or {}))
    with Mode():
        outs = run_module(module, args)
    return outs, seen


def reference(task, inputs, what):
    """The module's outputs on `inputs` (TF32 off), checked against the task's dtypes and
    shapes and for finiteness: new contiguous tensors. `what` names the inputs in reasons
    ("input set 2"). Raises Failure."""
    with no_tf32():
        try:
            random = getattr(task, "random", None)
            if random is not False:  # unknown (the first call) or random: the same draws
                seed_all(RANDOM_SEED)
            if random is None:
                host = host_rng_state()
                try:
                    outs, ops = random_ops(task.module, forward_args(task, inputs))
                except Exception:  # the module's own error, or one the dispatch mode causes:
                    seed_all(RANDOM_SEED)  # the plain run decides (and names its error)
                    outs, ops = run_module(task.module, forward_args(task, inputs)), []
                # Python's or NumPy's generator (random.random() in forward()): seeded alike
                # before every reference and ModelNew call as torch's is
                task.random = bool(ops) or host_rng_state() != host
            else:
                outs = run_module(task.module, forward_args(task, inputs))
        except Exception as e:
            raise Failure("%s: %s: %s" % (what, type(e).__name__, e))
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
        base = t.detach()
        c = base.contiguous()
        if shares(c, base):
            c = c.clone()
        # NaN and infinities are compared as values (compare); but NaN everywhere is the
        # poison a call's outputs start with: nothing would tell a candidate that does nothing
        if spec["dtype"] in FLOATS and c.numel() and bool(torch.isnan(c).all()):
            raise Failure('the oracle\'s output "%s" of %s is NaN in every element: there is '
                          'nothing to check a candidate against' % (spec["name"], what))
        refs.append(c)
    zero_own_outputs(outs, task.module, inputs)  # the caller masks or zeroes the copies
    return refs


def zero_own_outputs(outs, module, inputs):
    """Zeroes the output tensors `outs` of a reference call of `module` on `inputs`, except those
    sharing memory with an input, a parameter or a buffer: no reference stays behind, unmasked,
    in memory the allocator hands out again."""
    keep = list(inputs) + list(module.parameters()) + list(module.buffers())
    kept = set(storage_ptr(x) for x in keep)
    for t in outs:
        if isinstance(t, torch.Tensor) and storage_ptr(t) not in kept:
            t.detach().zero_()


def check_outputs_agree(task, outs, refs, mismatched, differs):
    """Raises Failure when a reference call's outputs `outs` disagree with earlier references
    `refs` of the same inputs: mismatched(o, spec, t, r) words an output of another type, shape
    or dtype, differs(spec, first, got, expected, bad, n) one whose values differ beyond the
    task's tolerance (NaN matching NaN; compare)."""
    for o, (t, r, spec) in enumerate(zip(outs, refs, task.outputs)):
        if not isinstance(t, torch.Tensor) or t.shape != r.shape or t.dtype != r.dtype:
            raise Failure(mismatched(o, spec, t, r))
        bad, n, first, g, e, _, _ = compare(t.detach(), r, spec["dtype"], task.atol, task.rtol)
        if bad:
            raise Failure(differs(spec, first, g, e, bad, n))


def drawn_alike(task, sums):
    """Input set 0 drawn a second time must hold the first draw's values (`sums`: their
    checksums): the worker draws every set, unseen ones and the witness's in two processes,
    from get_inputs() under a seed, and compares draws made apart. Raises Failure naming the
    input. get_inputs() drawing from a source the worker does not seed
    (np.random.default_rng(), os.urandom, the clock) was prepared, and every candidate, the
    identity included, was rejected for "modified its inputs" (an unseen set drawn twice
    differed)."""
    again = draw(task, 0)
    try:
        for i, (t, spec) in enumerate(zip(again, task.inputs)):
            if checksum(t) != sums[i]:
                raise Failure('get_inputs() gives input "%s" (inputs[%d]) other values on a '
                              'second draw under the same seed: draw from torch\'s, NumPy\'s '
                              'global or Python\'s generator, which the worker seeds (not '
                              'np.random.default_rng(), os.urandom or the clock)'
                              % (spec["name"], i))
    finally:
        del again


def reference_pure(task, inputs, before, refs):
    """The reference as a function of its inputs, on input set 0 at prepare: its first call
    left the inputs as they were (`before`: their checksums) and a second call on them gives
    the first's outputs `refs` (within the task's tolerance, NaN for NaN; torch's generator
    seeded alike when the task draws random numbers). Raises Failure naming what differs. A
    reference that edits its input (a hand-written bundle's `x.mul_(2)`), or whose outputs
    change from call to call (a counter kept in the module, BatchNorm's running statistics read
    back in eval mode, a torch.Generator of its own), was once prepared, and every candidate,
    the identity included, was then `rejected` ("modified its inputs", "not deterministic")."""
    for i, (t, spec) in enumerate(zip(inputs, task.inputs)):
        if checksum(t) != before[i]:
            raise Failure('the reference changes its input "%s" (inputs[%d]) in place: inputs '
                          'are read-only, so every candidate doing the same would be rejected; '
                          'make forward() work on a copy (x.clone())' % (spec["name"], i))
    with no_tf32():
        if task.random:
            seed_all(RANDOM_SEED)
        try:
            outs = run_module(task.module, forward_args(task, inputs))
        except Exception as e:
            raise Failure("input set 0, a second call: %s: %s" % (type(e).__name__, e))
    try:
        if len(outs) != len(refs):
            raise Failure("the module returns %d outputs on a second call on input set 0, %d on "
                          "the first" % (len(outs), len(refs)))
        check_outputs_agree(
            task, outs, refs,
            lambda o, spec, t, r: 'output "%s" (outputs[%d]) is %s on a second call on input '
            'set 0, %s on the first' % (spec["name"], o, describe_tensor(t), describe_tensor(r)),
            lambda spec, first, g, e, bad, n: 'the reference is not deterministic: element %d '
            'of output "%s" is %s on a first call on input set 0 and %s on a second (%d of %d '
            'differ beyond the tolerance): state kept between calls?'
            % (first, spec["name"], fmt(e), fmt(g), bad, n))
    finally:  # as reference() leaves them
        zero_own_outputs(outs, task.module, inputs)


def reference_fresh(task, inputs, refs, k):
    """The last input set's references `refs`, made by the task's module after the sets before
    it, against a new Model's first call on the same inputs (built as the first, under
    MODEL_SEED; torch's generator seeded alike for a random task). Raises Failure when they
    differ: the reference keeps state from call to call that a second call on the same inputs
    does not show (reference_pure): a result cached on the first call (a scale, a table) and
    used for every later input. Such a reference was prepared, the references of every set but
    the first were stale, and an honest candidate was wrong_output while the identity (which
    caches alike) was ok."""
    seed_all(MODEL_SEED)
    try:
        with on_device():
            fresh = task.ns["Model"](*task.ns["get_init_inputs"]()).to(DEV)
        with no_tf32():
            if task.random:
                seed_all(RANDOM_SEED)
            outs = run_module(fresh, forward_args(task, inputs))
    except Exception as e:
        raise Failure("input set %d, a new Model's first call: %s: %s" % (k, type(e).__name__, e))
    try:
        check_outputs_agree(
            task, outs, refs,
            lambda o, spec, t, r: 'output "%s" (outputs[%d]) of input set %d is %s from a new '
            'Model, %s after the earlier sets' % (spec["name"], o, k, describe_tensor(t),
                                                  describe_tensor(r)),
            lambda spec, first, g, e, bad, n: 'the reference depends on earlier calls: element '
            '%d of output "%s" of input set %d is %s after the earlier sets and %s from a new '
            'Model (%d of %d differ): state kept between calls (a cache)?'
            % (first, spec["name"], k, fmt(e), fmt(g), bad, n))
    finally:
        zero_own_outputs(outs, fresh, inputs)
        del fresh


@contextlib.contextmanager
def no_tf32():
    """TF32 off on CUDA for the reference's calls (set back after)."""
    if DEV.type != "cuda":
        yield
        return
    tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32


def storage_ptr(t):
    """The address of the storage under tensor `t`, the same for every view of it. A set of
    them answers "does it share memory with any of these" at once: comparing each output with
    each input and parameter took 1 s a call for a module of 400 parameters and 400 outputs,
    and its identity timed out at smoke (10 s)."""
    return t.untyped_storage().data_ptr() if hasattr(t, "untyped_storage") else \
        t.storage().data_ptr()


def shares(a, b):
    return storage_ptr(a) == storage_ptr(b)


# ---- the candidate's memory and the evaluator's -----------------------------------------------

class HostGuarded:
    """A host allocation between PROT_NONE guard pages (anonymous mmap): reading or writing past
    either end of the tensor faults."""

    def __init__(self, nbytes):
        page = mmap.PAGESIZE
        guard = max(page, (GUARD + page - 1) // page * page)
        body = max(page, ((nbytes + 63) // 64 * 64 + page - 1) // page * page)
        self.map = mmap.mmap(-1, guard + body + guard, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        probe = ctypes.c_char.from_buffer(self.map)
        base = ctypes.addressof(probe)
        del probe
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        for at in (base, base + guard + body):
            if libc.mprotect(ctypes.c_void_p(at), guard, 0) != 0:
                raise OSError(ctypes.get_errno(), "mprotect of a guard page failed")
        # the tensor ends at the upper guard, so an overrun of even one byte faults
        self.offset = guard + body - (nbytes + 63) // 64 * 64


def guarded_empty(spec):
    """An uninitialised tensor of the task's `spec` (dtype, shape) in its own allocation
    between guards (host: PROT_NONE pages; CUDA: GUARD bytes of GUARD_BYTE each side, checked by
    guards_intact). The tensor keeps its allocation alive."""
    dt = torch_dtype(spec["dtype"])
    n = 1
    for d in spec["shape"]:
        n *= d
    nbytes = n * ELEM_SIZE[spec["dtype"]]
    if DEV.type == "cpu":
        h = HostGuarded(nbytes)
        raw = torch.frombuffer(h.map, dtype=torch.uint8, count=nbytes, offset=h.offset)
        t = raw.view(dt).view(spec["shape"])
        return t
    body = (nbytes + ALIGN - 1) // ALIGN * ALIGN
    raw = torch.empty(GUARD + body + GUARD, dtype=torch.uint8, device=DEV)
    raw[:GUARD].fill_(GUARD_BYTE)
    raw[GUARD + nbytes:].fill_(GUARD_BYTE)
    t = raw[GUARD:GUARD + nbytes].view(dt).view(spec["shape"])
    t.kb_raw = raw
    t.kb_nbytes = nbytes
    return t


def guards_intact(t):
    """False when a CUDA guard around `t` (made by guarded_empty) was written."""
    raw = getattr(t, "kb_raw", None)
    if raw is None:
        return True
    lo = raw[:GUARD]
    hi = raw[GUARD + t.kb_nbytes:]
    return bool((lo == GUARD_BYTE).all()) and bool((hi == GUARD_BYTE).all())


def guarded_copy(x, spec):
    t = guarded_empty(spec)
    t.copy_(x)
    if hasattr(x, "kb_scalar"):  # the Python number it came from (scalar_tensor), exact
        t.kb_scalar = x.kb_scalar
    return t


MASK_A = 0x5851F42D4C957F2D
MASK_B = 0x2545F4914F6CDD1D


def key_stream(secret, lo, n, view):
    """The mask words lo..lo+n of a reference, in the integer view's dtype: a 64-bit mix of the
    element's index and the task's secret, cut to the view's width."""
    i = torch.arange(lo, lo + n, dtype=torch.int64, device=DEV)
    x = i * MASK_A + secret
    x = x ^ (x >> 31)
    x = x * MASK_B
    x = x ^ (x >> 29)
    return x.to(getattr(torch, view))


def mask_(t, secret, dtype):
    """Masks (or unmasks: XOR is its own inverse) the reference `t` in place, in chunks;
    returns its integer view, flat."""
    v = t.reshape(-1).view(getattr(torch, INT_VIEW[dtype]))
    for at in range(0, v.numel(), CHUNK):
        c = v[at:at + CHUNK]
        c.bitwise_xor_(key_stream(secret, at, c.numel(), INT_VIEW[dtype]))
    return v


def unmasked_chunk(ref, at, n, secret, dtype):
    """Elements at..at+n of the masked reference `ref` (its flat integer view), unmasked, as a
    new tensor of the task's dtype."""
    c = ref[at:at + n] ^ key_stream(secret, at, n, INT_VIEW[dtype])
    return c.view(torch_dtype(dtype))


# the share of the device's memory (the host's on the host) that a prepared task's input sets
# and what an evaluation holds beside them at its peak (peak_bytes) may take in one worker: the
# runner's other worker and the compile tier's builders share the rest
SETS_MEMORY_SHARE = 0.75
# bytes the chunked checks allocate beside the tensors they read, at most, per element of a
# chunk: a comparison (compare: float64 copies of both sides, the difference, the limit, the
# masks; 47-63 bytes measured on the CPU with torch 1.13 over f64, f32, f16, i64, i32 and u8
# outputs, masked and not, all elements bad and none) and a checksum (checksum: the product
# with the weights and the int64 copy the sum makes, 16 bytes a 4-byte word measured)
COMPARE_TEMP = 64
CHECKSUM_TEMP = 16


def memory_total():
    """Bytes of memory the worker's tensors live in: the CUDA device's total, the host's
    physical memory on the host; KB_SANDBOX_TORCH_MEMORY (bytes) instead when set (a tool driving
    the worker directly; the runner scrubs the environment)."""
    forced = os.environ.get("KB_SANDBOX_TORCH_MEMORY", "")
    if forced.isdigit() and int(forced) > 0:
        return int(forced)
    if DEV is not None and DEV.type == "cuda":
        return torch.cuda.get_device_properties(DEV).total_memory
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def size_text(n):
    """`n` bytes in GiB, or MiB under one GiB, one decimal."""
    return "%.1f GiB" % (n / 2.0**30) if n >= 1 << 30 else "%.1f MiB" % (n / 2.0**20)


def set_bytes(task):
    """Bytes one input set of `task` takes in this worker: its inputs, and per output the
    reference and the two output buffers (the trusted worker: one output buffer, no
    reference)."""
    trusted = CONF is None or CONF.trusted
    return tensor_bytes(task.inputs) + (1 if trusted else 3) * tensor_bytes(task.outputs)


def peak_bytes(task):
    """Bytes an evaluation of `task` holds at once in this worker beside its kept input sets
    (set_bytes each), at its peak; in = one set's inputs, out = one call's outputs (their
    bytes, tensor_bytes). The confined worker: the largest of
      - in + 2 out: an unseen call's verification (Unseen.verify): its inputs drawn again, the
        module's outputs on them and reference()'s contiguous copies of those;
      - out + the comparison's temporaries (COMPARE_TEMP an element of a chunk of the largest
        output): the references of an unseen call beside the comparison with them;
      - the checksums' temporaries (CHECKSUM_TEMP a word of a chunk of the largest tensor).
    The trusted worker (no references, unseen calls not verified): in + out, a witness call's
    inputs and outputs, or the checksums' temporaries. On CUDA both add the L2 flush buffer.
    The arms' calls hold less: each call's returned outputs (out) are copied into the
    evaluator's buffers and dropped (Run.settle) before the next arm's call, and a witness
    call's (in + out) before the next call's draw; the prepare holds less too (its sets have no
    output buffers while it draws and copies the last). Not counted: what the module or a
    candidate allocates inside its call (intermediates, workspaces), the outputs of a batch's
    calls held until its window ends (CUDA batches calls under SHORT_US only), and the copy
    bandwidth probe (once per worker, a quarter of the free memory at most)."""
    trusted = CONF is None or CONF.trusted
    ins = tensor_bytes(task.inputs)
    outs = tensor_bytes(task.outputs)
    # a checksum sums 4-byte words, or bytes where the size is not a multiple of 4
    words = max([n // 4 if n % 4 == 0 else n for n in
                 (tensor_bytes([s]) for s in task.inputs + task.outputs)] or [0])
    checksums = CHECKSUM_TEMP * min(CHUNK, words)
    if trusted:
        peak = max(ins + outs, checksums)
    else:
        elems = max([tensor_bytes([s]) // ELEM_SIZE[s["dtype"]] for s in task.outputs] or [0])
        peak = max(ins + 2 * outs, outs + COMPARE_TEMP * min(CHUNK, elems), checksums)
    return peak + 2 * l2_bytes()


def sets_that_fit(task):
    """How many of `task`'s input sets (the first ones) this worker keeps: as many as fit in
    SETS_MEMORY_SHARE of memory_total() beside what an evaluation holds at its peak
    (peak_bytes), at most the task's; 0 when not even one fits (sets_plan fails the prepare).
    The importer keeps two sets where one takes over 8 GiB, a rule sized on the H200's 141 GB:
    on an 80 GB H100 KernelBench's l1_39 (two sets of 32 GiB in the confined worker) ended
    infra_error, out of device memory, at every evaluation (2026-12-06). Fewer sets than the
    task declares are said in the prepare reply ("sets_note") and show in each result's
    sets_checked."""
    room = int(SETS_MEMORY_SHARE * memory_total()) - peak_bytes(task)
    per = set_bytes(task)
    if room < per:
        return 0
    return min(len(task.sets), room // per) if per > 0 else len(task.sets)


def sets_plan(task):
    """(the number of `task`'s input sets this worker keeps, the prepare reply's "sets_note":
    "" when it keeps them all). Raises Failure naming the sizes when not even one set fits."""
    keep = sets_that_fit(task)
    if keep == len(task.sets):
        return keep, ""
    sets = 1 if keep == 0 else len(task.sets)
    sizes = ("%s here and an evaluation %s more at its peak (inputs drawn again, a call's "
             "outputs, references, the checks' temporaries), more than %d%% of the device's %s"
             % (size_text(sets * set_bytes(task)), size_text(peak_bytes(task)),
                round(SETS_MEMORY_SHARE * 100), size_text(memory_total())))
    if keep == 0:
        raise Failure("the task does not fit this worker's memory: one input set takes " + sizes)
    return keep, "%d of the task's %d input sets kept: %d take %s" % (keep, len(task.sets),
                                                                     len(task.sets), sizes)


def prepare_task(req):
    task = Task()
    task.key = get(req, "key", "str")
    task.oracle = get(req, "oracle", "str")
    TRUSTED["files"].add(os.path.realpath(task.oracle))  # trusted code, as the libraries are
    task.inputs = tensors(req, "inputs")
    task.outputs = tensors(req, "outputs")
    task.sets = input_sets(req)
    # the witness's calls cycle over every set the task declares, in both workers alike, however
    # many each keeps (a worker's kept sets depend on its own memory rule)
    task.all_sets = list(task.sets)
    # the trusted worker prepared for a witness only: its calls draw their own inputs, so no
    # input set is kept (a second copy of a large task's sets beside the confined worker's did
    # not fit an 80 GB device: docs/sandbox.md)
    task.module_only = module_only(req)
    keep, task.sets_note = (0, "") if task.module_only else sets_plan(task)
    task.sets = task.sets[:keep]
    task.atol = get(req, "atol", "num", lo=0, hi=1e300)
    task.rtol = get(req, "rtol", "num", lo=0, hi=1e300)
    ns = exec_reference(task.oracle)
    task.ns = ns
    seed_all(MODEL_SEED)
    try:
        with on_device():
            module = ns["Model"](*ns["get_init_inputs"]())
        task.module = module.to(DEV)  # left in training mode, as KernelBench runs it
    except Exception as e:
        raise Failure("Model(*get_init_inputs()) raised %s: %s" % (type(e).__name__, e))
    task.params = None
    task.set_inputs = []
    task.refs = []
    # only timed in torch (the trusted worker, or a tool importing this file): no references,
    # no output buffers
    task.trusted_only = CONF is None or CONF.trusted
    task.secret = int.from_bytes(os.urandom(8), "little") >> 2
    task.sol_fraction = get(req, "sol_input_fraction", "num", False, 1.0, 0, 1)
    task.draw_s = 0.0  # the slowest draw of one input set: the runner sizes the witness by it
    if task.module_only:
        prepare_module_only(task)  # task.sets is empty: the loop below keeps nothing
    for k in range(len(task.sets)):
        inputs = timed_draw(task, k, task.sets[k])
        before = [checksum(t) for t in inputs] if k == 0 else None
        if k == 0:
            drawn_alike(task, before)
        refs = reference(task, inputs, "input set %d" % k)
        if k == 0:
            reference_pure(task, inputs, before, refs)
        elif k == len(task.sets) - 1:
            reference_fresh(task, inputs, refs, k)
        if task.trusted_only:
            task.set_inputs.append(inputs)
            for r in refs:
                r.zero_()
            continue
        task.set_inputs.append([guarded_copy(x, spec) for x, spec in zip(inputs, task.inputs)])
        task.refs.append([mask_(r, task.secret, spec["dtype"])
                          for r, spec in zip(refs, task.outputs)])
        del inputs
    sync()
    task.in_sums = [[checksum(t) for t in ins] for ins in task.set_inputs]
    task.ref_sums = [[checksum(t) for t in refs] for refs in task.refs]
    if task.trusted_only:
        task.chk = task.tim = []
    else:
        task.chk = [[guarded_empty(spec) for spec in task.outputs] for _ in task.sets]
        task.tim = [[guarded_empty(spec) for spec in task.outputs] for _ in task.sets]
    task.holds = list(range(len(task.sets)))
    task.damaged = False
    task.compiled = None
    task.compile_error = None
    task.fresh_seeds = set(s["seed"] for s in task.sets)
    return task


def module_only(req):
    """The prepare request's "module_only" (the trusted worker only: the witness's prepare)."""
    only = get(req, "module_only", "bool", False, False)
    if only and not (CONF is None or CONF.trusted):
        raise BadRequest("module_only", '"module_only": only the trusted worker prepares a task '
                         'without its input sets (for the witness)')
    return only


def timed_draw(task, k, s):
    """The inputs of set k drawn from the set `s` (draw), the draw's time kept in task.draw_s
    when it is the slowest yet. Raises Failure."""
    try:
        t0 = CLOCK()
        inputs = draw(task, k, s)
        sync()
        task.draw_s = max(task.draw_s, CLOCK() - t0)
    except Failure:
        raise
    except Exception as e:
        raise Failure("input set %d: %s: %s" % (k, type(e).__name__, e))
    return inputs


def prepare_module_only(task):
    """What a module-only prepare (the trusted worker, for a witness) does with the inputs: the
    first set drawn once, timed (draw_s), and the module called on it, which decides the
    task's random (its references seeded alike before each call, as the confined worker's
    are) and what its draws look like (task.params); then nothing of it kept. Such a task
    serves "witness" requests only; a "torch" request needs it prepared again without
    module_only."""
    inputs = timed_draw(task, 0, task.all_sets[0])
    refs = reference(task, inputs, "input set 0")
    del inputs, refs


def describe_tensor(t):
    if not isinstance(t, torch.Tensor):
        return type(t).__name__
    return "%s %s" % (str(t.dtype).replace("torch.", ""), list(t.shape))


# ---- evaluation -------------------------------------------------------------------------------

def plain_tensor(t):
    """Whether `t` is exactly a torch.Tensor (or an nn.Parameter, whose torch functions are the
    default ones): what a ModelNew may return as an output (ModuleCandidate.call)."""
    return type(t) is torch.Tensor or type(t) is torch.nn.Parameter


class Verdict(Exception):
    def __init__(self, status, reason, fatal=False, oom=False):
        Exception.__init__(self, reason)
        self.status = status
        self.reason = reason
        self.fatal = fatal
        self.oom = oom  # the shared device out of memory (the eval reply's "oom")


# ---- the evaluator's integrity -----------------------------------------------------------------
# A ModelNew (or a C library) runs inside this process and could replace what the evaluator
# itself calls: the clock, torch's comparison operators, the worker's own functions and
# constants, the JSON of the reply, or leave a torch mode or a global setting (TF32) behind for
# the evaluations after it. class Surface records all of that before any candidate code of an
# evaluation runs and compares it after the evaluation (whatever its verdict): a change is
# `rejected`, naming it, and fatal (the worker process is not trusted again; the runner starts a
# new one). The clocks are also bound here, at import, so that replacing time.perf_counter does
# not change a measurement either. Limits: docs/sandbox.md ("What this does not guard").
CLOCK = time.perf_counter
MONOTONIC = time.monotonic
# the worker's globals it rebinds itself (device setup, probes, caches)
REBOUND = frozenset(("torch", "DEV", "STREAM", "CUDART", "CONF", "COPY_BW", "JIT_FOLDER"))
# modules whose attributes the worker's source names (module.attr...): each one named is kept
SURFACE_MODULES = ("ctypes", "json", "math", "mmap", "operator", "os", "resource", "signal",
                   "socket", "struct", "sys", "time", "torch")
MISSING = object()


def surface_flags():
    """torch's process-wide settings that change the precision of what an evaluation computes
    (TF32, reduced-precision reductions, the default dtype), and the depth of its mode stacks
    (a mode left entered intercepts every later operation): (name, value) pairs, MISSING for
    one this torch does not have (its modules raise other errors than AttributeError for an
    unknown name: cuBLASModule an AssertionError)."""
    def read(fn):
        try:
            return fn()
        except Exception:
            return MISSING
    b = torch.backends
    c = torch._C
    return [("torch.backends.cuda.matmul.allow_tf32", read(lambda: b.cuda.matmul.allow_tf32)),
            ("torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
             read(lambda: b.cuda.matmul.allow_fp16_reduced_precision_reduction)),
            ("torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
             read(lambda: b.cuda.matmul.allow_bf16_reduced_precision_reduction)),
            ("torch.backends.cudnn.allow_tf32", read(lambda: b.cudnn.allow_tf32)),
            ("torch.get_float32_matmul_precision()", read(torch.get_float32_matmul_precision)),
            ("torch.get_default_dtype()", read(torch.get_default_dtype)),
            ("torch function modes entered", read(lambda: c._len_torch_function_stack())),
            ("torch dispatch modes entered", read(lambda: c._len_torch_dispatch_stack())),
            ("the aten kernels registered through torch.library", read(aten_overrides))]


# Dispatch keys whose kernels compute what the evaluator runs (its copies and comparisons
# included); torch itself registers Meta and Python kernels for aten as it imports.
COMPUTE_KEYS = frozenset(("CPU", "CUDA", "AutogradCPU", "AutogradCUDA", "Autograd",
                          "CompositeImplicitAutograd", "CompositeExplicitAutograd"))


def aten_overrides():
    """The aten operators' kernels for COMPUTE_KEYS registered through torch.library (its
    record of implementations), sorted: a solution that put its own kernel under aten::copy_
    could do its work when the evaluator copies the outputs out."""
    return tuple(sorted(k for k in torch.library._impls
                        if k.startswith("aten/") and k.rsplit("/", 1)[-1] in COMPUTE_KEYS))


def perf_settings():
    """torch's process-wide settings that change how fast an evaluation runs (or whether it may
    use a nondeterministic algorithm), not the precision of what it computes: a candidate may
    set them for itself (cuDNN's autotuner for its convolutions, grad mode off), and
    Surface.changed() sets them back after its evaluation, so the next one starts as every
    evaluation does. (name, value, setter) triples."""
    b = torch.backends.cudnn
    return [("torch.backends.cudnn.benchmark", b.benchmark,
             lambda v: setattr(b, "benchmark", v)),
            ("torch.backends.cudnn.deterministic", b.deterministic,
             lambda v: setattr(b, "deterministic", v)),
            ("torch.backends.cudnn.enabled", b.enabled, lambda v: setattr(b, "enabled", v)),
            ("torch.are_deterministic_algorithms_enabled()",
             torch.are_deterministic_algorithms_enabled(), torch.use_deterministic_algorithms),
            ("torch.is_grad_enabled()", torch.is_grad_enabled(), torch.set_grad_enabled),
            ("torch.get_num_threads()", torch.get_num_threads(), torch.set_num_threads)] + \
        [(n, v, put) for n, v, put in process_settings() if v is not MISSING]


# the environment variables the worker itself sets (JIT caches, inductor's threads)
WORKER_ENV = frozenset(("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_LIBCUDA_PATH",
                        "TORCHINDUCTOR_COMPILE_THREADS"))


def environment():
    """os.environ but WORKER_ENV, as a frozenset of its items."""
    return frozenset((k, v) for k, v in os.environ.items() if k not in WORKER_ENV)


def set_environment(items):
    """os.environ set back to `items` (environment()), WORKER_ENV left alone."""
    want = dict(items)
    for k in [k for k in os.environ if k not in WORKER_ENV and k not in want]:
        del os.environ[k]
    for k, v in want.items():
        if os.environ.get(k) != v:
            os.environ[k] = v


def denormals_flushed():
    """Whether this thread flushes denormal floats to zero (torch.set_flush_denormal, which has
    no getter): a denormal times one reads as zero then."""
    return (torch.tensor([1e-39]) * torch.tensor([1.0])).item() == 0.0


def read_umask():
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


def set_warning_filters(filters):
    warnings.filters[:] = list(filters)
    warnings._filters_mutated()


def std_fds():
    """What descriptors 0, 1 and 2 are: (fd, device, inode) each."""
    return tuple((fd, os.fstat(fd).st_dev, os.fstat(fd).st_ino) for fd in (0, 1, 2))


def set_std_fds(_):
    for fd, copy in STD_FDS.items():
        os.dup2(copy, fd)


def set_ignored_signals(handlers):
    for s, h in zip(IGNORED_SIGNALS, handlers):
        if h is not None:
            signal.signal(s, h)


def set_gc(state):
    gc.set_threshold(*state[0])
    (gc.enable if state[1] else gc.disable)()


def process_settings():
    """The process's and the interpreter's own settings that outlive a call and that a candidate
    can change from Python: its CPU affinity, working folder, umask, environment, descriptors
    0-2 (a candidate that pointed stderr at /dev/null took the next one's "blocked system
    call" account from the runner) and ignored signals; the
    interpreter's switch interval, recursion limit, collector, warning filters and standard
    streams; torch's oneDNN switch and denormal flushing (found 2026-12-07: a ReLU that pinned
    the worker to one CPU, slowed thread switches and the collector, turned warnings into errors
    and oneDNN off was ok, and every later candidate of that worker ran so: affinity [0], gc
    (1, 1, 1), a recursion limit of 120 that made the next file fail to load). (name, value,
    setter) triples as perf_settings; MISSING for one this platform or torch lacks. Set back
    after each evaluation, and held at their first values while the same-run baseline and torch
    eager are sampled, as perf_settings are."""
    def read(fn):
        try:
            return fn()
        except Exception:
            return MISSING
    mkldnn = torch.backends.mkldnn
    return [("the worker's CPU affinity", read(lambda: frozenset(os.sched_getaffinity(0))),
             lambda v: os.sched_setaffinity(0, v)),
            ("the worker's working folder", read(os.getcwd), os.chdir),
            ("the worker's umask", read(read_umask), os.umask),
            ("the worker's environment", read(environment), set_environment),
            ("sys.getswitchinterval()", sys.getswitchinterval(), sys.setswitchinterval),
            ("sys.getrecursionlimit()", sys.getrecursionlimit(), sys.setrecursionlimit),
            ("the collector's thresholds", (gc.get_threshold(), gc.isenabled()), set_gc),
            ("warnings.filters", tuple(warnings.filters), set_warning_filters),
            ("the worker's descriptors 0, 1 and 2", read(std_fds), set_std_fds),
            ("the worker's signal handlers",
             read(lambda: tuple(signal.getsignal(s) for s in IGNORED_SIGNALS)),
             set_ignored_signals),
            ("sys.stdout", sys.stdout, lambda v: setattr(sys, "stdout", v)),
            ("sys.stderr", sys.stderr, lambda v: setattr(sys, "stderr", v)),
            ("torch.backends.mkldnn.enabled", read(lambda: mkldnn.enabled),
             lambda v: setattr(mkldnn, "enabled", v)),
            ("torch.set_flush_denormal", read(denormals_flushed), torch.set_flush_denormal)]


def raw_attr(owner, key):
    """`owner`'s attribute `key` as stored, without the binding of a descriptor (a classmethod's
    getattr is a new bound object every time): through the classes' dictionaries for a class,
    the dictionary for a module or a dict (a submodule not imported yet is MISSING), else
    getattr; MISSING when there is none."""
    if isinstance(owner, dict):
        return owner.get(key, MISSING)
    if isinstance(owner, type):
        for k in owner.__mro__:
            d = vars(k)
            if key in d:
                return d[key]
        return MISSING
    d = getattr(owner, "__dict__", None)
    if isinstance(d, dict) and key in d:
        return d[key]
    if type(owner).__name__ == "module":
        return MISSING  # never through the module's __getattr__: torch's imports submodules
    try:
        return getattr(owner, key, MISSING)
    except Exception:
        return MISSING


def kept(obj):
    """Whether the surface records `obj`: a module, a class, a function or a descriptor."""
    return callable(obj) or isinstance(obj, (staticmethod, classmethod, property)) or \
        type(obj).__name__ == "module"


# torch's namespaces whose functions a task's module calls, looked up at call time (nn.Linear
# calls torch.nn.functional.linear, F.relu calls torch.relu): Surface records each one's
# functions, classes and modules, as it records what the worker's own source names
TORCH_NAMESPACES = ("torch", "torch.nn.functional", "torch.nn.init", "torch.linalg", "torch.fft",
                    "torch.special", "torch.nn.modules.module", "torch._C._nn",
                    "torch._C._linalg", "torch._C._fft", "torch._C._special")


class Reach:
    """What the task's own module goes through when this process runs it (for the references of
    the unseen calls, and as torch eager and the same-run baseline timed beside the candidate),
    recorded before the candidate's code runs; changed() names the first thing that is no longer
    the same, or None. A candidate in this process could otherwise slow the module it is
    compared with (torch.nn.functional.linear replaced by one that sleeps when the candidate is
    not calling: 8.9x "faster" than eager on the CPU, ok, before 2026-12-06) or make the
    references agree with wrong outputs. Recorded, each as one table compared at C speed (a
    few microseconds per thousand entries, checked after every sample): the functions, classes
    and modules of TORCH_NAMESPACES, of every nn.Module class torch.nn exports and of
    torch._C._VariableFunctions' class; the global module hooks (the dicts of
    torch.nn.modules.module whose names start with _global); for the task's module and each of
    its submodules, the class's own attributes where torch does not define it, the instance's
    callable attributes, its parameters, buffers, submodules and hooks (by identity) and where each
    parameter and buffer lives (pointer, shape, strides, dtype); the globals of the task file.
    Not recorded: the contents of parameters and buffers (the candidate does not hold the
    module). Like every check of this worker, it is Python in the candidate's process, which
    can reach it (docs/sandbox.md, "The checks are in the candidate's reach")."""

    def __init__(self, model):
        self.tables = []  # (label, mapping, keys, objects as they were)
        self.dicts = []  # (label, dict, its keys as they were, its objects as they were)
        self.places = []  # (label, tensor, placement() as it was)
        for name in TORCH_NAMESPACES:
            ns = torch
            for part in name.split(".")[1:]:
                ns = getattr(ns, part, None)
            if ns is not None:
                self.keep_table(name + ".", vars(ns), kept)
        vf = getattr(torch._C, "_VariableFunctions", None)
        if vf is not None:
            self.keep_table("torch._C._VariableFunctions.", vars(type(vf)), kept)
        for k, cls in sorted(vars(torch.nn).items()):
            if isinstance(cls, type) and issubclass(cls, torch.nn.Module):
                self.keep_table("torch.nn.%s." % k, vars(cls), kept)
        hooks = vars(torch.nn.modules.module)
        for k in sorted(hooks):
            if k.startswith("_global") and isinstance(hooks[k], dict):
                self.keep_dict("torch.nn.modules.module." + k, hooks[k])
        if model is None or not isinstance(model, torch.nn.Module):
            return
        src = sys.modules.get(type(model).__module__)
        self.keep_module(model, "the task's", vars(src) if src is not None and src is not torch
                         else None)

    def keep_module(self, model, whose, namespace):
        """Records `model` (an nn.Module) and each of its submodules as __init__ says, labelled
        `whose` ("the task's"), and the globals of its file (`namespace`, a dict, or None). Also
        for the same-run baseline's ModelNew once loaded (Surface.keep_baseline)."""
        if namespace is not None:
            self.keep_table("%s globals: " % whose, namespace, kept)
        for path, sub in model.named_modules():
            who = "%s module%s" % (whose, "." + path if path else "")
            for c in type(sub).__mro__:
                if c is object or c.__module__.split(".")[0] == "torch":
                    break
                self.keep_table("%s's class %s." % (who, c.__name__), vars(c), kept)
            # its methods and submodules as attributes (a tensor attribute may be set anew by
            # the module itself at each call: torch.nn.utils.weight_norm's hook does)
            self.keep_table(who + ".", vars(sub), kept)
            for k in ("_parameters", "_buffers", "_modules", "_forward_hooks",
                      "_forward_pre_hooks", "_backward_hooks", "_state_dict_hooks"):
                if isinstance(vars(sub).get(k), dict):
                    self.keep_dict("%s.%s" % (who, k), vars(sub)[k])
            for k, t in list(sub.named_parameters(recurse=False)) + \
                    list(sub.named_buffers(recurse=False)):
                if t is not None:
                    self.places.append(("where %s.%s lives" % (who, k), t, placement(t)))

    def keep_table(self, label, mapping, which):
        keys = tuple(k for k, v in list(mapping.items()) if isinstance(k, str) and which(v))
        if keys:
            self.tables.append((label, mapping, keys, tuple(mapping[k] for k in keys)))

    def keep_dict(self, label, d):
        self.dicts.append((label, d, tuple(d), tuple(d.values())))

    def changed(self):
        for label, mapping, keys, was in self.tables:
            try:
                now = operator.itemgetter(*keys)(mapping) if len(keys) > 1 else \
                    (mapping[keys[0]],)
            except KeyError:
                now = tuple(mapping.get(k, MISSING) for k in keys)
            if any(map(operator.is_not, now, was)):
                k = next(k for k, a, b in zip(keys, now, was) if a is not b)
                return "%s%s was %s" % (label, k, "removed" if mapping.get(k, MISSING)
                                        is MISSING else "replaced")
        for label, d, keys, objs in self.dicts:
            if len(d) != len(keys) or tuple(d) != keys or \
                    any(map(operator.is_not, d.values(), objs)):
                return "%s was changed" % label
        for label, t, was in self.places:
            if placement(t) != was:
                return "%s was changed" % label
        return None


def native_threads():
    """The ids of this process's threads, Python's and native ones alike (/proc/self/task, which
    the confined worker may read), as a set of strings; empty when it cannot be read."""
    try:
        return set(os.listdir("/proc/self/task"))
    except OSError:
        return set()


def threads_left(before):
    """The threads of this process that are not among `before` (native_threads()), each as
    "tid (name)", at most 8. A candidate's native thread (pthread_create from a C library, a C++
    std::thread of an extension: no Python frame shows it to foreign_threads) outlives its
    evaluation: relu_spinner.c left one spinning on a CPU, and the honest relu_honest.c after it
    in that worker was rejected by the witness at the full tier (its samples 1275 us a call, the
    runner's clock 8398 us), found 2026-12-07. A C library candidate is rejected for one at
    the first check (Surface.watch_native); for a ModelNew, whose torch may start threads of its
    own, the reply names them and the runner replaces the worker after the evaluation's witness
    when there is one."""
    out = []
    for tid in sorted(native_threads() - before, key=lambda t: int(t) if t.isdigit() else 0):
        try:
            with open("/proc/self/task/%s/comm" % tid) as f:
                name = f.read().strip()
        except OSError:
            continue  # ended meanwhile
        out.append("%s (%s)" % (tid, name[:32]))
    return out[:8]


def foreign_threads(known):
    """Python threads running now that are not in `known` (thread idents) and that candidate code
    runs: a frame of code that is neither a library's, the worker's, a reference's nor the
    standard library's on its stack, or, with only standard-library frames, a target that is not
    Python code (threading.Thread(target=sum, ...)). Each as "file:line" of its top frame. Such
    a thread can run while the evaluator times what the candidate is compared with (torch
    eager, the same-run baseline) and slow it down: linear_slow_reference_thread.py. A thread
    of a library (its frames on the stack) or of the standard library's own machinery started
    by a library (a ThreadPoolExecutor's idle worker) is not counted."""
    frames = current_frames()
    try:
        return foreign_frames(frames, known)
    finally:
        # the dict holds this thread's own frame, which holds the dict: a cycle that only the
        # collector frees, keeping every caller's locals meanwhile (an evaluation's outputs, 7 GiB
        # each for KernelBench's level-1 norms, ran an 80 GB card out of memory: measured on the
        # CPU, 45 call outputs held after one evaluation, none after this)
        frames.clear()


def foreign_frames(frames, known):
    """foreign_threads over `frames` (sys._current_frames())."""
    out = []
    for ident, top in frames.items():
        if ident in known:
            continue
        frame, library, own = top, False, False
        while frame is not None and not (library or own):
            path = frame.f_code.co_filename
            if not path.startswith("<frozen "):
                real = real_path(path)
                library = trusted_file(real)
                own = not library and (real.startswith(TRUSTED["never"]) or
                                       not real.startswith(TRUSTED["stdlib"]))
            frame = frame.f_back
        if not own and not library:
            th = sys.modules.get("threading")
            thread = getattr(th, "_active", {}).get(ident) if th else None
            target = getattr(thread, "_target", None)
            own = target is not None and not hasattr(target, "__code__") and \
                not hasattr(getattr(target, "__func__", None), "__code__")
        if own:
            out.append("%s:%d" % (os.path.basename(top.f_code.co_filename), top.f_lineno))
    return out


def current_frames():
    """sys._current_frames(), read as the worker (refuse_introspection would refuse the read
    where the worker's own file is not trusted: unconfined)."""
    _IN_HOOK[0] = True
    try:
        return sys._current_frames()
    finally:
        _IN_HOOK[0] = False


def placement(t):
    """Where tensor `t`'s elements live and how they are laid out."""
    return (t.data_ptr(), tuple(t.shape), tuple(t.stride()), str(t.dtype), str(t.device))


def interpreter_hooks():
    """The interpreter's hooks that run Python code inside the evaluator's own flow, as
    (name, object) pairs: the profile and trace functions of sys and of threading (for threads
    started later), and the garbage collector's callbacks. A candidate that set one could do its
    work from there after its call returned (a profile function called at the evaluator's copy
    of the outputs, after the timed call)."""
    th = sys.modules.get("threading")
    return (("sys.setprofile's function", sys.getprofile()),
            ("sys.settrace's function", sys.gettrace()),
            ("threading.setprofile's function", getattr(th, "_profile_hook", None)),
            ("threading.settrace's function", getattr(th, "_trace_hook", None)),
            ("gc.callbacks", tuple(gc.callbacks)))


def imported_from_file(mod):
    """Whether the sys.modules entry `mod` is a module imported from a file of a library or the
    standard library, or built into the interpreter (what a later import may find there), by what
    it says of its origin."""
    spec = getattr(mod, "__spec__", None)
    origin = getattr(spec, "origin", None) or getattr(mod, "__file__", None)
    if not isinstance(origin, str) or not isinstance(mod, type(sys)):
        return False
    if origin in ("built-in", "frozen"):
        return True
    real = real_path(origin)
    return trusted_file(real) or (real.startswith(TRUSTED["stdlib"]) and
                                  not real.startswith(TRUSTED["never"]))


class Imports:
    """What a later `import` and a later name lookup find, recorded before an evaluation's
    candidate code runs and set back after it: the entries of sys.modules, the import machinery
    (sys.meta_path, sys.path_hooks, sys.path) and the builtins. A candidate that put a proxy
    under sys.modules["torch.nn.functional"] or sys.modules["math"], an import hook on
    sys.meta_path or a name among the builtins changed what the next candidates of the worker
    import (found 2026-12-07, ok before). A module it imported stays; an entry added that is no
    module imported from a library's or the standard library's file (imported_from_file) is
    dropped, so the next import loads the real one."""

    def __init__(self):
        self.modules = dict(sys.modules)
        self.names = list(self.modules)
        self.objects = list(self.modules.values())
        self.machinery = [(n, list(getattr(sys, n))) for n in ("meta_path", "path_hooks", "path")]
        self.builtins = dict(vars(builtins))

    def set_back(self):
        """Puts back what changed; returns what it put back, a list of names."""
        out = []
        mods = sys.modules
        if len(mods) != len(self.names) or any(map(operator.is_not, map(mods.get, self.names),
                                                    self.objects)):
            for name, mod in self.modules.items():
                if mods.get(name, MISSING) is not mod:
                    mods[name] = mod
                    out.append("sys.modules[%r]" % name)
            for name in [n for n in mods if n not in self.modules]:
                if not imported_from_file(mods[name]):
                    del mods[name]
                    out.append("sys.modules[%r]" % name)
        for name, was in self.machinery:
            now = getattr(sys, name)
            if len(now) != len(was) or any(map(operator.is_not, now, was)):
                now[:] = was
                out.append("sys." + name)
        b = vars(builtins)
        if len(b) != len(self.builtins) or any(b.get(k, MISSING) is not v
                                               for k, v in self.builtins.items()):
            for k in [k for k in b if k not in self.builtins]:
                del b[k]
                out.append("the builtin " + k)
            for k, v in self.builtins.items():
                if b.get(k, MISSING) is not v:
                    b[k] = v
                    out.append("the builtin " + k)
        return out


class Surface:
    """What the evaluator calls and reads, recorded when made (before an evaluation's candidate
    code runs); changed() names the first thing that is no longer the same object (or, for the
    worker's dict constants and torch's settings, the same value), or None. Recorded: every
    global of this module but REBOUND, with the functions of its classes and the contents of
    its dict constants; every attribute the source names as module.attr (SURFACE_MODULES) that
    is a module, a class or a function; every builtin it calls; every function of
    torch.Tensor, torch.nn.Module, torch.cuda.Event and torch.cuda.Stream; surface_flags();
    interpreter_hooks(). perf_settings() are set back instead. Compared after the evaluation
    and, without setting anything back, before each copy of a ModelNew's outputs (Run.settle):
    a function replaced during a call and put back by the time the evaluation ends is caught
    while it is still in place."""

    names = None  # (dotted module attributes, builtins called), parsed once from the source

    @classmethod
    def parse(cls):
        if cls.names is None:
            with open(os.path.abspath(__file__), encoding="utf-8") as f:
                src = f.read()
            pat = r"\b(%s)((?:\.[A-Za-z_]\w*)+)" % "|".join(SURFACE_MODULES)
            dotted = sorted(set(m + rest for m, rest in re.findall(pat, src)))
            calls = set(re.findall(r"(?<![.\w])([A-Za-z_]\w*)\(", src))
            cls.names = (dotted, sorted(n for n in calls
                                        if n in vars(builtins) and not n.startswith("__")))
        return cls.names

    def __init__(self, model=None):
        dotted, calls = Surface.parse()
        g = globals()
        self.items = []  # (name, owner, key, object as raw_attr gives it)
        self.values = []  # (name, dict, copy of its contents)
        for name, obj in list(g.items()):
            if name in REBOUND or name.startswith("__"):
                continue
            self.items.append(("the worker's " + name, g, name, obj))
            if isinstance(obj, type) and obj.__module__ == __name__:
                for k, v in vars(obj).items():
                    if kept(v):
                        self.items.append(("the worker's %s.%s" % (name, k), obj, k, v))
            elif isinstance(obj, dict) and name.isupper():
                self.values.append(("the worker's " + name, obj, dict(obj)))
        seen = set()
        for name in dotted:
            parts = name.split(".")
            owner = g.get(parts[0])
            for k in range(1, len(parts)):
                obj = raw_attr(owner, parts[k]) if owner is not None else MISSING
                if obj is MISSING or not kept(obj):
                    break
                if (id(owner), parts[k]) not in seen:
                    seen.add((id(owner), parts[k]))
                    self.items.append((".".join(parts[:k + 1]), owner, parts[k], obj))
                owner = obj
        for n in calls:
            self.items.append(("the builtin " + n, builtins, n, raw_attr(builtins, n)))
        for cls_name, cls in (("torch.Tensor", torch.Tensor), ("torch.nn.Module", torch.nn.Module),
                              ("torch.cuda.Event", torch.cuda.Event),
                              ("torch.cuda.Stream", torch.cuda.Stream)):
            for k in dir(cls):
                v = raw_attr(cls, k)
                if v is not MISSING and kept(v):
                    self.items.append(("%s.%s" % (cls_name, k), cls, k, v))
        self.flags = surface_flags()
        self.perf = perf_settings()
        self.hooks = interpreter_hooks()
        self.reached = len(INTROSPECTION)
        self.reach = Reach(model)  # what the task's module goes through (`model`: its instance)
        self.threads = frozenset(current_frames())  # the worker's own Python threads
        self.native = None  # native_threads() when a C library candidate is watched (watch_native)
        self.imports = Imports()  # set back, not compared

    def initial_speed(self):
        """A context: while it is entered, the speed settings (perf_settings) are as they were
        when the evaluation began; the candidate's own are put back after. The same-run
        baseline's and torch eager's samples run so (SameRunArm): a candidate may set them for
        itself (cuDNN's autotuner), but one that turned cuDNN off or the host's threads down
        would otherwise slow what its speed is compared with, in its own process."""
        return SpeedSettings(self.perf)

    def keep_baseline(self, candidate):
        """Records the same-run baseline's module (a ModuleCandidate, loaded after this surface
        was taken) as the task's is (Reach.keep_module): its class's methods, the instance's,
        its submodules and hooks, the globals of its file. The candidate runs first in the same
        process and reaches it through torch.nn.Module.__subclasses__(): relu_slow_baseline.py
        made the identity baseline's Model.forward wait 200 us before it ran, and was ok at the
        full tier at a same-run speedup of 6.56 (1.24 for plain torch.relu) before 2026-12-07."""
        self.reach.keep_module(candidate.module, "the same-run baseline's", candidate.ns)

    def watch_native(self, before):
        """Counts, from now on, any thread of the process that is not among `before`
        (native_threads()) as one the candidate started: for a C library candidate, whose code
        runs no torch (a ModelNew's torch may start threads of its own, so there only the worker
        is replaced after the evaluation: threads_left). relu_thread_after_return.c queued each
        call's job for a native thread of its own and returned at once: ok at screen at 17.3 us
        a call before 2026-12-07, the work done after the timed window."""
        self.native = before

    def changed(self, set_back=True):
        """What changed, or None; with `set_back` the speed and process settings are first set
        back, and, when nothing else changed, the imports (Imports)."""
        if set_back:
            for (name, was, put), (_, now, _) in zip(self.perf, perf_settings()):
                if now != was:
                    try:
                        put(was)
                    except Exception as err:
                        return "%s changed and cannot be set back (%s)" % (name,
                                                                           first_line(err))
        if len(INTROSPECTION) > self.reached:
            return "it reached for %s (refused)" % INTROSPECTION[self.reached]
        for (name, was), (_, now) in zip(self.hooks, interpreter_hooks()):
            if now is not was and now != was:
                return "%s was set" % name
        for name, owner, key, obj in self.items:
            now = raw_attr(owner, key)
            if now is not obj:
                return "%s was %s" % (name, "removed" if now is MISSING else "replaced")
        for name, d, copy in self.values:
            if d != copy:
                return "the contents of %s were changed" % name
        what = self.reach.changed()
        if what is not None:
            return what
        started = foreign_threads(self.threads)
        if started:
            return "a thread it started was still running (at %s)" % ", ".join(started[:3])
        left = threads_left(self.native) if self.native is not None else []
        if left:
            return "a native thread it started was still running (%s)" % ", ".join(left[:3])
        for (name, was), (_, now) in zip(self.flags, surface_flags()):
            if now is not was and now != was:
                return "%s was %s, is %s" % (name, "unset" if was is MISSING else repr(was),
                                             "unset" if now is MISSING else repr(now))
        if set_back:
            self.imports.set_back()
        return None


def code_tampered(reply):
    """Rejects (fatal) the request in `reply` when the code the worker holds changed
    (Confinement.code_changed); the timings go."""
    what = CONF.code_changed()
    if what is None:
        return
    for k in ("timing", "baseline_timing", "eager_timing"):
        reply.pop(k, None)
    reply["status"], reply["reason"], reply["fatal"] = "rejected", what[:255], True


def tampered(surface, reply):
    """Rejects (fatal) the evaluation in `reply` when `surface` changed; whatever the verdict
    was, the process is no longer the evaluator it was."""
    what = surface.changed() if surface is not None else None
    if what is None:
        return
    for k in ("timing", "baseline_timing", "eager_timing"):
        reply.pop(k, None)
    reply["fatal"] = True
    if reply.get("status") == "rejected" and reply.get("reason", "").startswith(
            "changed the evaluator"):
        return  # found during the evaluation already (Run.settle), and said so
    reply["status"] = "rejected"
    reply["reason"] = ("changed the evaluator: %s (a solution may not change torch, Python's "
                       "builtins or the worker; the worker restarts)" % what)[:255]


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


def l2_bytes():
    """The CUDA device's L2 in bytes (64 MiB where torch does not say); 0 on the host."""
    if DEV is None or DEV.type != "cuda":
        return 0
    return getattr(torch.cuda.get_device_properties(DEV), "L2_cache_size", 0) or (64 << 20)


def l2_flush_buffer():
    """On CUDA, twice the device's L2 in bytes (written over before a timed window, it leaves
    nothing of the inputs in the L2); None on the host."""
    if DEV.type != "cuda":
        return None
    return torch.empty(2 * l2_bytes(), dtype=torch.uint8, device=DEV)


class Run:
    def __init__(self, task, e):
        self.task = task
        self.e = e
        self.n = len(task.sets) if e["sets"] <= 0 or e["sets"] > len(task.sets) else e["sets"]
        self.stream_ptr = STREAM.cuda_stream if STREAM is not None else None
        self.max_abs = None
        self.max_rel = None
        self.pending = []  # a ModelNew's outputs not yet copied into the evaluator's buffers
        self.surface = None  # the evaluation's Surface, checked before each copy (settle)
        self.collector_was = None  # gc.isenabled() when a ModelNew's call returned (settle)
        self.flush = l2_flush_buffer() if e["flush_l2"] else None
        self.ooms = device_ooms()  # before any candidate code: ran_out

    def call(self, fn, s, outs, who, phase):
        if isinstance(fn, ModuleCandidate):
            return fn.call(self, s, outs, who, phase)
        t = self.task
        ins = descriptors(t.set_inputs[s], t.inputs)
        out = descriptors(outs[s], t.outputs)
        ret = fn(ins, len(t.inputs), out, len(t.outputs), self.stream_ptr)
        if ret != 0:
            raise Verdict("crash", "%skb_forward returned %d on input set %d (%s call)"
                          % (who, ret, s, phase))

    def collector_off(self):
        """Turns the garbage collector off as a ModelNew's forward returns, until its outputs are
        copied (settle turns it back on). A collection runs Python code of the candidate: the
        finalizers (__del__, weakref callbacks) of its objects in reference cycles. With the
        collector's threshold set low, the first collection after forward returned came at one
        of the worker's allocations after the timed window closed and before the copy, and a
        finalizer computed the outputs there: relu_gc_finalizer.py, ok at screen at 28.8 us
        against plain torch.relu's 61.7 us before 2026-12-07. gc.isenabled and gc.disable
        allocate nothing, and nothing the worker allocates comes between forward's return and
        this call."""
        if self.collector_was is None:
            self.collector_was = gc.isenabled()
        gc.disable()

    def settle(self):
        """Copies the outputs a ModelNew returned into the evaluator's (poisoned) buffers, after
        the timed window, then poisons the returned tensors: memory the allocator hands out
        again never holds an earlier call's answer. Tensors sharing memory with an input, a
        parameter or a buffer of the module are left alone. Then turns the collector back on if
        it was on when the call returned (collector_off)."""
        try:
            self.copy_out()
        finally:
            was, self.collector_was = self.collector_was, None
            if was:
                gc.enable()

    def copy_out(self):
        pending, self.pending = self.pending, []
        # checked for a C library too: loaded in this process, it can reach the interpreter
        what = self.surface.changed(set_back=False) if self.surface else None
        if what is not None:
            raise Verdict("rejected", "changed the evaluator during the evaluation: %s (found "
                          "after its call returned, before its outputs were read; a solution "
                          "may not change torch, Python's builtins, the interpreter's hooks or "
                          "the worker; the worker restarts)" % what, fatal=True)
        for cand, dsts, got, ins in pending:
            kept = set(storage_ptr(x) for x in list(ins) + cand.state)
            # every output copied before any is poisoned: outputs may share memory (return y, y)
            for d, g in zip(dsts, got):
                d.copy_(g)
            for g, spec in zip(got, self.task.outputs):
                if storage_ptr(g) not in kept:
                    poison(g, spec["dtype"])

    def sync(self, s, phase):
        try:
            self.settle()
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
        for role, group, specs in (("input", t.set_inputs, t.inputs), ("output", t.chk,
                                   t.outputs), ("output", t.tim, t.outputs)):
            for s, ts in enumerate(group):
                for i, x in enumerate(ts):
                    if not guards_intact(x):
                        t.damaged = True
                        raise Verdict("rejected", 'wrote outside its outputs: the guard bytes '
                                      'around %s "%s" of input set %d changed (%s)'
                                      % (role, specs[i]["name"], s, when))

    def outputs_pass(self, outs, mask):
        t = self.task
        why = None
        for s in range(self.n):
            if not mask & (1 << s):
                continue
            held = t.holds[s]
            for o, spec in enumerate(t.outputs):
                bad, n, first, g, e, mabs, mrel = compare(outs[s][o], t.refs[held][o],
                                                          spec["dtype"], t.atol, t.rtol,
                                                          t.secret)
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
            self.put(b, want)
        sync()

    def put(self, b, want):
        """Draws the contents of input set `want` into the buffers of set `b`."""
        t = self.task
        t.holds[b] = -1  # unknown until the copy is done: a later rotate(0) redraws it
        fresh = draw(t, want)
        for x, y in zip(t.set_inputs[b], fresh):
            x.copy_(y)
        t.holds[b] = want


def first_line(e):
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def bitwise_first(x, y):
    """The flat index of the first element of x whose bytes differ from y's, -1 when none."""
    a = x.reshape(-1).contiguous().view(torch.uint8)
    b = y.reshape(-1).contiguous().view(torch.uint8)
    diff = (a != b).nonzero()
    return int(diff[0][0]) // x.element_size() if diff.numel() else -1


class Timer:
    """Times one sample of `batch` calls: CUDA events on the candidate's stream, or the clock."""

    def __init__(self):
        # CUDA: (the wait for the whole device after a window, a second wait right after it,
        # the window), us
        self.tails = []
        self.tail = None  # what untimed_work judged by, for the reply
        if STREAM is not None:
            self.start = torch.cuda.Event(enable_timing=True)
            self.end = torch.cuda.Event(enable_timing=True)

    def begin(self, run, batch):
        self.run = run
        if STREAM is None:
            self.t0 = CLOCK()
            return
        reset_l2_persistence()
        with torch.cuda.stream(STREAM):
            if run.flush is not None:
                run.flush.zero_()
            if batch > 1:
                torch.cuda._sleep(int((20.0 + ENQUEUE_US * batch) * 2000))
        self.start.record(STREAM)

    def stop(self, batch):
        if STREAM is None:
            us = (CLOCK() - self.t0) * 1e6 / batch
        else:
            self.end.record(STREAM)
            self.end.synchronize()
            us = self.start.elapsed_time(self.end) * 1000.0 / batch
            t0 = CLOCK()
            torch.cuda.synchronize(DEV)  # work of other streams still running (untimed_work)
            t1 = CLOCK()
            torch.cuda.synchronize(DEV)  # the control: the same wait on a device now idle
            self.tails.append(((t1 - t0) * 1e6, (CLOCK() - t1) * 1e6, us * batch))
        self.run.settle()  # a ModelNew's outputs reach the evaluator's buffers outside the window
        return us


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


def batch_for(est):
    """Calls per timed sample for a call of `est` us: 1, or on CUDA for a call under SHORT_US
    enough to fill BATCH_TARGET_US (2 to BATCH_MAX)."""
    if STREAM is None or est >= SHORT_US:
        return 1
    return min(max(int(math.ceil(BATCH_TARGET_US / max(est, 0.5))), 2), BATCH_MAX)


def sample_loop(run, one, warm, start_time, after=None):
    """Warm-up, a probe for batching, then samples of `one(batch, first_set)` -> us per call
    until a stopping rule; `after(samples_so_far, batch)`, when given, runs after each sample
    (the calls on unseen inputs) and returns the seconds it timed. Returns (samples, batch)."""
    e = run.e
    for w in range(warm):
        one(1, w % run.n, timed=False)
    batch = batch_for(one(1, 0, timed=True))
    samples = []
    timed = 0.0
    nxt = 0
    while len(samples) < e["max_samples"]:
        us = one(batch, nxt, timed=True)
        nxt = (nxt + batch) % run.n
        samples.append(us)
        timed += us * batch * 1e-6
        n = len(samples)
        if after is not None:
            timed += after(n, batch)
        if n < e["min_samples"]:
            continue
        if timed >= e["max_seconds"] or MONOTONIC() - start_time >= e["budget_s"]:
            break
        mean = sum(samples) / n
        if n > 1 and mean > 0:
            var = sum((x - mean) ** 2 for x in samples) / (n - 1)
            if math.sqrt(var) / mean < e["noise"]:
                break
    return samples, batch


def median(v):
    return stats(v, 0).get("median_us", 0.0)


class SpeedSettings:
    """Surface.initial_speed's context."""

    def __init__(self, initial):
        self.initial = initial
        self.now = None

    def __enter__(self):
        self.now = perf_settings()
        for (_, was, put), (_, v, _) in zip(self.initial, self.now):
            if v != was:
                put(was)
        return self

    def __exit__(self, *exc):
        for (_, was, _), (_, v, put) in zip(self.initial, self.now):
            if v != was:
                put(v)
        return False


class SameRunArm:
    """A module timed beside the candidate in the same process, one sample after each of the
    candidate's samples (`sample`, from the sampling's `after`), so that what changes over the
    seconds of sampling (clocks, the host's load) weighs on both alike: the same-run baseline,
    and torch eager (the task's own module, the oracle: trusted code this worker already runs
    for the references of the unseen calls) at the runner's request. Timed one after the other
    instead (before 2026-12-06), the second timing of the same module was the slower in 12 of the
    14 KernelBench identities outside 0.97-1.03 of their own same-run baseline on an H100, and
    the trusted worker's eager, another process, differed from the confined worker's identity
    by up to 1.34x and from itself minutes later by up to 1.89x (docs/tasks.md). Its calls write
    into the check outputs (the candidate's timed outputs stay for the re-check); its timer is
    its own (the device waits after its windows are not the candidate's, which untimed_work
    judges); its batch size is its own (batch_for); it runs under no_grad with the speed
    settings the evaluation began with (Surface.initial_speed). With `optional`, an exception
    of its own calls that is not a verdict stops the arm with a `note` and leaves the
    candidate's evaluation alone; else, and for a verdict (a change of the evaluator found at
    a call), it ends the evaluation as any error there does."""

    def __init__(self, run, fn, who, warmup, optional=False):
        self.run, self.fn, self.who, self.optional = run, fn, who, optional
        self.timer = Timer()
        self.samples = []
        self.seconds = 0.0
        self.note = ""
        self.batch = 1
        t = MONOTONIC()
        try:
            for w in range(warmup):
                self.one(1, w % run.n, False)
            self.batch = batch_for(self.one(1, 0, True))
        except Exception as err:
            self.stop(err)
        self.seconds += MONOTONIC() - t

    def one(self, batch, first, timed):
        """One sample (or warm-up) of `batch` calls, under no_grad (as the trusted worker times
        the module and a ModelNew runs) and the evaluation's initial speed settings."""
        run = self.run
        with (run.surface.initial_speed() if run.surface else SpeedSettings([])), \
                torch.no_grad():
            if timed:
                self.timer.begin(run, batch)
            for b in range(batch):
                run.call(self.fn, (first + b) % run.n, run.task.chk, self.who, "timed")
            if not timed:
                run.sync(first, "warm-up")
                return 0.0
            return self.timer.stop(batch)

    def sample(self, count):
        if self.fn is None:
            return
        t = MONOTONIC()
        try:
            self.samples.append(self.one(self.batch, (count * self.batch) % self.run.n, True))
        except Exception as err:
            self.stop(err)
        self.seconds += MONOTONIC() - t

    def stop(self, err):
        if not self.optional or isinstance(err, Verdict):
            raise err
        self.fn = None
        self.samples = []
        self.note = "%stiming in this process failed: %s: %s" % (self.who, type(err).__name__,
                                                                first_line(err))


class Unseen:
    """Timed calls on input contents the candidate has never seen. A fresh sample draws, outside
    the timed window, new contents into the buffers of k = min(batch, sets) input sets (the
    buffers the candidate has seen, so neither pointer nor call count tells it apart): each set
    the same distribution as the set its buffer holds, under a seed no set uses and drawn
    anew for every sample; times k calls, one per buffer, as a repeated sample is timed; then,
    outside the window, draws the same contents again, checks the buffers still hold them, runs
    the module on them for the references, verifies every output element, and draws the
    buffers' own contents back.

    Each fresh sample comes with two samples on repeated contents, just before it: a plain one
    (the same k calls made as the sampling makes them) and a control one (the buffers' own
    contents drawn into them again first, so it went through exactly what the fresh sample went
    through but for the contents being new). A candidate is rejected when its times on unseen
    inputs exceed UNSEEN_RATIO times the control samples' or MAIN_RATIO times the plain ones'
    (the looser bound, since a draw before a call can change its time; it is there for a
    candidate that tells draws from the time between its calls), by UNSEEN_FLOOR_US at least,
    and again on a confirmation round of CONFIRM_PAIRS more triples."""

    def __init__(self, run, fn, timer, mask, verify=True):
        self.run = run
        self.fn = fn
        self.check = verify  # False: time_torch (the module is the reference: nothing to verify)
        self.timer = timer
        self.mask = mask  # the sets whose timed outputs the re-check compares
        e = run.e
        self.target = min(FRESH_MAX, max(FRESH_MIN, int(math.ceil(e["max_samples"] / 10.0))))
        self.stride = max(1, e["min_samples"] // self.target)
        self.fresh = []
        self.control = []
        self.plain = []
        self.batch = 1
        self.taken_at = 0  # main samples when the last fresh sample was taken
        self.unverified = 0

    def after(self, count, batch):
        self.batch = batch
        early = len(self.fresh) < self.target and count % self.stride == 0
        late = (len(self.fresh) >= self.target and len(self.fresh) < 2 * FRESH_MAX and
                count - self.taken_at >= FRESH_LATE)
        if not early and not late:
            return 0.0
        self.taken_at = count
        return self.take(self.plain, self.control, self.fresh)

    def take(self, plain, control, fresh):
        """One triple: plain, control and fresh sample; returns the seconds timed."""
        k = min(self.batch, self.run.n)
        first = len(fresh) % self.run.n
        a = self.sample(k, first, "plain")
        b = self.sample(k, first, "control")
        c = self.sample(k, first, "fresh")
        plain.append(a)
        control.append(b)
        fresh.append(c)
        return (a + b + c) * k * 1e-6

    def sample(self, k, first, mode):
        run = self.run
        task = run.task
        bufs = [(first + b) % run.n for b in range(k)]
        drawn = []
        for b in bufs if mode != "plain" else []:
            held = task.holds[b]
            spec = dict(task.sets[held])
            if mode == "fresh":
                spec["seed"] = new_seed(task)
            task.holds[b] = -1  # a verdict now leaves it to rotate(0) to draw it back
            new = draw(task, held, spec)
            for x, y in zip(task.set_inputs[b], new):
                x.copy_(y)
            del new
            if mode == "fresh":
                drawn.append((b, held, spec))
            else:
                task.holds[b] = held
        for b in bufs:
            poison_set(task.tim, b, task)
        if STREAM is None:
            # the host's clock is wall time: a pause gives the scheduler its turn before the
            # window rather than in it (after a draw, the process had run for longer than
            # after a plain sample, and was preempted in the fresh call more often)
            time.sleep(HOST_PAUSE_S)
        self.timer.begin(run, k)
        for b in bufs:
            run.call(self.fn, b, task.tim, "", "timed")
            if mode == "fresh":  # its outputs are of other inputs: verified here, not re-checked
                self.mask[0] &= ~(1 << b)
            else:
                self.mask[0] |= 1 << b
        try:
            us = self.timer.stop(k)
        except RuntimeError as err:
            raise Verdict("crash", "device error during a timed call: %s" % first_line(err),
                          fatal=True)
        for b, held, spec in drawn:
            run.sync(b, "timed")
            if self.check:
                self.verify(b, held, spec)
            else:
                run.put(b, held)
        return us

    def verify(self, b, held, spec):
        run = self.run
        task = run.task
        what = "an unseen input set (seed %d, drawn as input set %d)" % (spec["seed"], held)
        again = draw(task, held, spec)
        for i, (x, y) in enumerate(zip(task.set_inputs[b], again)):
            if not torch.equal(x, y):
                first = bitwise_first(x, y)
                task.damaged = True
                raise Verdict("rejected", 'modified its inputs: %sinput "%s" of %s changed'
                              % ("element %d of " % first if first >= 0 else "",
                                 task.inputs[i]["name"], what))
        try:
            refs = reference(task, again, what)
        except Failure:
            refs = None  # an output NaN everywhere on these inputs (reference): not verified
            self.unverified += 1
        del again  # not beside the references during the comparison (peak_bytes)
        for o, spec_o in enumerate(task.outputs if refs is not None else []):
            bad, n, first, g, e, _, _ = compare(task.tim[b][o], refs[o], spec_o["dtype"],
                                                task.atol, task.rtol)
            if bad:
                raise Verdict("rejected", 'wrong output on unseen inputs: output "%s" of %s: %s'
                              % (spec_o["name"], what, describe(bad, n, first, g, e)))
        for r in refs or []:
            r.zero_()
        del refs
        run.put(b, held)

    def judge(self):
        """None, or the reason a candidate whose times on unseen inputs are inconsistent with
        those on repeated inputs is rejected (after a confirmation round)."""
        if len(self.fresh) < FRESH_MIN:
            return None
        first = self.suspect(self.fresh, self.control, self.plain)
        if first is None:
            return None
        plain, control, fresh = [], [], []
        for _ in range(CONFIRM_PAIRS):
            self.take(plain, control, fresh)
        again = self.suspect(fresh, control, plain)
        self.fresh += fresh
        self.control += control
        self.plain += plain
        if again is None:
            return None
        rep = self.control if again == "control" else self.plain
        lf, lr = min(self.fresh), min(rep)
        return ("times on unseen inputs (fastest %.1f us, median %.1f us over %d samples) are "
                "%.1fx those on repeated inputs (fastest %.1f us, median %.1f us over %d "
                "samples): results kept between calls"
                % (lf, median(self.fresh), len(self.fresh), lf / lr if lr > 0 else float("inf"),
                   lr, median(rep), len(rep)))

    @staticmethod
    def suspect(fresh, control, plain):
        """"control" or "plain" (the repeated samples the unseen ones are too slow against), or
        None. Two tests must both hold. The fastest samples: what disturbs a sample
        (preemption, an interrupt, a neighbour on the memory bus) only adds time, and a
        candidate cannot make its calls on unseen inputs faster than the work they need. And
        the median of the ratios of each unseen sample to the repeated one taken just before
        it: one disturbed sample cannot make it (a loaded host's wall clock once made an honest
        fastest ratio 1.6x, the medians 0.94x), and a cache that answers repeated inputs makes
        every ratio large; a candidate that slowed its repeated calls to hide it would slow the
        median it is ranked by."""
        lf = min(fresh)
        for name, rep, ratio in (("control", control, UNSEEN_RATIO), ("plain", plain,
                                                                       MAIN_RATIO)):
            if not rep or lf <= ratio * min(rep) or lf - min(rep) <= UNSEEN_FLOOR_US:
                continue
            q = [f / r if r > 0 else float("inf") for f, r in zip(fresh, rep)]
            if median(q) > ratio:
                return name
        return None


def new_seed(task):
    """A seed no input set of the task and no earlier fresh draw used."""
    while True:
        seed = int.from_bytes(os.urandom(8), "little") >> 2
        if seed not in task.fresh_seeds:
            task.fresh_seeds.add(seed)
            return seed


def determinism(run, fn):
    """A second call on input set 0 must give the first call's outputs, within the tolerance."""
    t = run.task
    poison_set(t.tim, 0, t)
    run.call(fn, 0, t.tim, "", "second check")
    run.sync(0, "second check")
    for o, spec in enumerate(t.outputs):
        a = t.chk[0][o]
        b = t.tim[0][o]
        if spec["dtype"] in FLOATS and bool(torch.isnan(b).all()):
            raise Verdict("rejected", 'did the work on the first call only: output "%s" of '
                          'input set 0 was right on the first call and left untouched (still '
                          'poisoned) on a second call on the same inputs' % spec["name"])
        bad, n, first, g, e, _, _ = compare(b, a, spec["dtype"], t.atol, t.rtol)
        if bad:
            raise Verdict("rejected", 'not deterministic: two calls on input set 0 disagree '
                          'beyond the tolerance: element %d of output "%s" is %s on the first '
                          'call and %s on the second (%d of %d elements differ)'
                          % (first, spec["name"], fmt(e), fmt(g), bad, n))


COPY_BW = None  # bytes/s of a device-to-device copy, probed once (speed of light)


def copy_bandwidth():
    """The device-to-device copy bandwidth (bytes read + written per second), best of 5 copies
    of up to SOL_PROBE_BYTES, probed once per worker."""
    global COPY_BW
    if COPY_BW is None:
        free = torch.cuda.mem_get_info(DEV)[0]
        n = max(1 << 20, min(SOL_PROBE_BYTES, free // 4))
        a = torch.ones(n, dtype=torch.uint8, device=DEV)
        b = torch.empty_like(a)
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        best = 0.0
        for r in range(6):
            e0.record(STREAM)
            b.copy_(a)
            e1.record(STREAM)
            e1.synchronize()
            sec = e0.elapsed_time(e1) / 1000.0
            if r > 0 and sec > 0:
                best = max(best, 2.0 * n / sec)
        del a, b
        COPY_BW = best
    return COPY_BW


def tensor_bytes(specs):
    total = 0
    for spec in specs:
        n = ELEM_SIZE[spec["dtype"]]
        for d in spec["shape"]:
            n *= d
        total += n
    return total


def untimed_work(timer):
    """None, or why the candidate's samples left work running on the device after their timed
    windows (CUDA; Timer.tails): work on a stream other than the one it was given, not waited
    for, which the events on that stream did not time."""
    if DEV.type != "cuda" or len(timer.tails) < TAIL_MIN:
        return None
    # each wait less its own control (the wait on the idle device a moment later, in the same
    # conditions): a loaded host slows both, so one idle probe per worker made an honest
    # kernel's waits look like work (relu.cu at full beside the KernelBench import on the H200:
    # 25.4 us "more" against a 4.6 us probe taken before the load)
    idle = median([c for _, c, _ in timer.tails])
    extra = median([t - c for t, c, _ in timer.tails])
    window = median([w for _, _, w in timer.tails])
    timer.tail = {"idle_us": idle, "extra_us": extra, "window_us": window,
                  "samples": len(timer.tails)}
    if extra <= TAIL_FLOOR_US or extra <= TAIL_SHARE * window:
        return None
    return ("work the timer did not see: after its timed windows (median %.1f us) the device "
            "was still busy for a median %.1f us more (%d samples; an idle device's wait is "
            "%.1f us): work on another stream, not waited for by the current one"
            % (window, extra, len(timer.tails), idle))


def speed_of_light(run, median_us):
    """Flushed tiers (CUDA): a call must move its inputs once (the fraction the task declares
    with sol_input_fraction) and write what of its outputs the L2 cannot hold."""
    if DEV.type != "cuda" or run.flush is None or median_us <= 0:
        return
    t = run.task
    l2 = l2_bytes()
    need = t.sol_fraction * tensor_bytes(t.inputs) + max(0, tensor_bytes(t.outputs) - l2)
    bw = copy_bandwidth()
    if need <= 0 or bw <= 0:
        return
    floor_us = need / (SOL_MARGIN * bw) * 1e6
    if median_us < floor_us:
        raise Verdict("rejected", "faster than the memory system allows: median %.2f us for "
                      "the %.0f bytes a call must move (inputs read once, outputs beyond the L2 "
                      "written once), which take at least %.2f us at %.0f GB/s (%.1fx the "
                      "measured copy bandwidth, %.0f GB/s)"
                      % (median_us, need, floor_us, SOL_MARGIN * bw / 1e9, SOL_MARGIN, bw / 1e9))


# ---- KernelBench-format candidates (class ModelNew) -----------------------------------------

def kernelbench_imports():
    """What a ModelNew file imports lazily, imported before confinement: the extension loader
    (it imports setuptools and distutils)."""
    import importlib.util  # noqa: F401
    import hashlib  # noqa: F401
    import torch.utils.cpp_extension  # noqa: F401
    torch.set_grad_enabled(False)  # a ModelNew runs under no_grad, as the module is timed
    user_name()


def user_name():
    """USER and LOGNAME from the password database while it can be read: the environment is
    scrubbed, and getpass.getuser(), which torch.compile's import calls, falls back to
    getpwuid(), which fails once /etc/passwd is out of reach (measured on the H200: "KeyError:
    getpwuid(): uid not found: 0" for the first torch.compile candidate, and then "Artifact of
    type=inductor already registered" for every later one, as the half-done import was rerun)."""
    if os.environ.get("USER") and os.environ.get("LOGNAME"):
        return
    try:
        import pwd
        name = pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        name = "uid%d" % os.getuid()
    os.environ.setdefault("USER", name)
    os.environ.setdefault("LOGNAME", name)


def jit_imports(folder):
    """torch.compile's modules (dynamo, inductor) and Triton, readied before confinement, and
    the caches pointed at the build's JIT folder for a candidate whose build says "jit"
    (torch.compile or Triton). The readying (jit_ready) is for the process and is done at its
    first KernelBench-format evaluation on CUDA whatever the label: the worker confines itself
    at its first evaluation, and a torch.compile candidate evaluated after a plain-torch one in
    the same worker met a confined process (measured on the H200: `ptxas --version` refused for
    11 compile seeds that came after their task's identity seed)."""
    jit_ready()
    try:
        with open(os.path.join(folder, "build.json")) as f:
            built = json.load(f)
        jit = built.get("jit", built.get("label") == "torch_compile")
    except (OSError, ValueError, AttributeError):
        return
    if jit:
        point_jit_caches(folder, built)


JIT_READY = []  # one entry once jit_ready() ran in this process


def jit_ready():
    """Once per process, unconfined, on CUDA: inductor in this process, never its pool of
    compiler processes, which the filter forbids (measured on the H200: such a start from one
    of the pool's threads, SIGSYS blocked there, ended the worker by SIGSYS with no line); an
    import that fails half-way under confinement cannot be retried (inductor registers its
    cache artifacts once per process); dynamo's first use (dynamo_first_use); and Triton's
    tool versions (triton_probes), which it asks for a kernel's cache key, cache hit or not,
    and keeps for the process. A failure here is left for the candidate's run to meet."""
    if JIT_READY or CONF.done or DEV.type != "cuda":
        return
    JIT_READY.append(True)
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    try:
        import torch._dynamo  # noqa: F401
        import torch._inductor.config as config
        config.compile_threads = 1
        dynamo_first_use()
    except Exception as e:
        print("torch.compile not readied: %s: %s" % (type(e).__name__, first_line(e)),
              file=sys.stderr)
    triton_probes()


def dynamo_first_use():
    """One call of a trivial function compiled with dynamo's eager backend (no inductor, no
    compiler): what dynamo installs on its first use, process-wide (torch.nn.Module.__init__
    wrapped for its generation tags, TorchPatcher's patches), is installed here, before the
    evaluation's Surface is recorded; a candidate's torch.compile then finds it in place
    (measured on the H200, torch 2.11: every compile seed that came first in its worker was
    rejected, "torch.nn.Module.__init__ was replaced"). The compiled function stays in dynamo's
    cache; torch._dynamo.reset() would not undo the patches either."""
    f = torch.compile(lambda x: x + 1, backend="eager")
    f(torch.zeros(4, device=DEV))


def jit_dir(folder, built=None):
    """Where the build put Triton's and inductor's caches: build.json's "jit_dir" (the runner's
    `<key>.jit` folder), else the build folder itself (a build of an older runner). `built`:
    build.json already read, or None to read it here."""
    try:
        if built is None:
            with open(os.path.join(folder, "build.json")) as f:
                built = json.load(f)
        d = built.get("jit_dir")
        if isinstance(d, str) and os.path.isdir(d):
            return d
        if isinstance(d, str):  # the warm-up left nothing: caches of its own, empty
            d = os.path.join(CONF.rw if CONF is not None else folder, "jit-empty")
            os.makedirs(os.path.join(d, "triton"), exist_ok=True)
            os.makedirs(os.path.join(d, "inductor"), exist_ok=True)
            return d
    except (OSError, ValueError, AttributeError):
        pass
    return folder


def point_jit_caches(folder, built=None):
    """Points Triton's and inductor's caches at the build's JIT folder (jit_dir), or, in a
    confined worker, at its own writable copy of it (writable_jit_dir)."""
    d = jit_dir(folder, built)
    if CONF is not None and not CONF.trusted:
        d = writable_jit_dir(d)
    os.environ["TRITON_CACHE_DIR"] = os.path.join(d, "triton")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(d, "inductor")


def fresh_jit_copies():
    """Drops the confined worker's copies of the builds' JIT caches (writable_jit_dir, and the
    empty caches of jit_dir) before an evaluation's code runs, so that each evaluation copies
    anew what it uses. The copies are in the worker's own folder, which every candidate of the
    worker may write: kept between evaluations, a file a candidate put into the copy of another
    build (its same-run baseline's, or a later tier's of any build whose copy stayed) was what
    inductor or Triton loaded for that build afterwards (found by reading, 2026-12-07: the copy
    was reused whenever its folder existed). What a candidate writes during its own evaluation
    is still read in it (its baseline's copy included)."""
    global JIT_FOLDER
    JIT_FOLDER = None
    if CONF is None or CONF.trusted:
        return
    for name in ("jit", "jit-empty"):
        shutil.rmtree(os.path.join(os.path.realpath(CONF.rw), name), ignore_errors=True)


def writable_jit_dir(d):
    """A confined worker's copy of the build's JIT folder `d` in its own folder,
    `<--dir>/jit/<name of d>`: inductor writes into its cache while it runs a cached module
    whenever a file it wants is not there (an output code file, a newer graph's entry), and the
    build's folder is read-only here (measured on an H100, torch 2.11, 2026-12-06: three honest
    torch.compile seeds ended `crash`, "PermissionError: ... <key>.jit/inductor/ur/.<pid>.<tid>
    .tmp"). The copy is made once per build and evaluation (fresh_jit_copies), under a
    temporary name renamed into place (a copy cut short is never used); the folder keeps the
    last two copies made (a candidate and its same-run baseline take turns), older ones are
    removed before a new copy.
    What a run writes there stays in this worker's folder: the shared cache is never written by
    a confined process. Returns `d` itself when `d` is already in the worker's folder or the
    copy fails (no room: said on stderr, and the run then meets the read-only folder as
    before)."""
    rw = os.path.realpath(CONF.rw)
    if os.path.realpath(d).startswith(rw + os.sep):
        return d
    root = os.path.join(rw, "jit")
    dst = os.path.join(root, same_length_name(d, root))
    if os.path.isdir(dst):
        return dst
    tmp = "%s.tmp%d" % (dst, os.getpid())
    try:
        if os.path.isdir(root):
            old = sorted((os.path.join(root, n) for n in os.listdir(root)),
                         key=lambda x: os.stat(x).st_mtime)
            for x in old[:-1]:
                shutil.rmtree(x, ignore_errors=True)
        os.makedirs(root, exist_ok=True)
        same = copy_tree(d, tmp, d, dst)
        os.rename(tmp, dst)
        if not same:
            print("kb_sandbox_torch: the JIT caches' copy %s is not as long a path as %s: "
                  "paths the caches hold still name the read-only folder" % (dst, d),
                  file=sys.stderr)
        return dst
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        print("kb_sandbox_torch: the JIT caches %s not copied into %s: %s (read-only there)"
              % (d, root, first_line(e)), file=sys.stderr)
        return d


def same_length_name(d, root):
    """The name of the copy of the JIT folder `d` in `root`: the end of `d`'s own name (the
    build's key and ".jit"), cut or padded with "_" so that `root/<name>` is as long a path as
    `d` (copy_tree can then replace one by the other in any file, pickles and marshalled
    code included, where strings carry their length); `d`'s own name when too short a name
    would be left (under 24 characters: two keys might then share their end)."""
    base = os.path.basename(os.path.normpath(d))
    n = len(os.path.abspath(d)) - len(root) - 1
    if n < 24:
        return base
    return ("_" * max(0, n - len(base)) + base)[-n:]


def copy_tree(src, dst, old, new):
    """The folders and regular files under `src` copied to `dst` (made here) by plain reads
    and writes: shutil.copytree's file copy uses sendfile and its copystat listxattr, both
    trapped by the confined worker's filter. Links and other special files are left out (the
    caches hold none). Each file's bytes get `new`'s absolute path wherever `old`'s stands,
    when the two are of the same length: inductor's and Triton's cached entries name their own
    files by absolute path (measured on an H100, torch 2.11: `l2_22`'s compile seed, run from
    the copy, wrote into the read-only `<key>.jit/inductor/` at its first call and ended
    `crash`, PermissionError), so the copy must not lead back to the shared folder, and no
    string's length changes (pickles, marshalled code). Returns False when the lengths differ
    (nothing replaced), else True."""
    a, b = os.path.abspath(old).encode(), os.path.abspath(new).encode()
    same = len(a) == len(b)
    for top, dirs, files in os.walk(src):
        out = os.path.join(dst, os.path.relpath(top, src))
        os.makedirs(out, exist_ok=True)
        for name in files:
            path = os.path.join(top, name)
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as f:
                    data = f.read()
                with open(os.path.join(out, name), "wb") as g:
                    g.write(data.replace(a, b) if same else data)
    return same


def triton_probes():
    """Triton's driver (its utility library, from the build's cache) and its backend's hash,
    which runs `ptxas --version` (triton.compiler.make_backend(target).hash()): Triton keeps
    that answer for the process. TRITON_LIBCUDA_PATH first, so that no start of the driver
    runs `ldconfig -p`. Absent or older Triton: nothing to do (the audit hook names any
    process it starts later)."""
    libcuda_path()
    try:
        import triton
        from triton.compiler import compiler as tc
        target = triton.runtime.driver.active.get_current_target()
        tc.make_backend(target).hash()
    except Exception:
        pass


def libcuda_path():
    """TRITON_LIBCUDA_PATH, when unset, to the folder of the libcuda this process has mapped:
    Triton otherwise runs `ldconfig -p` to find it whenever its driver starts or a launcher is
    built (measured on the H200: not cached in torch 2.11's Triton; the audit hook named it).
    kb_build_modelnew.py sets the same, so the builder and the worker see one environment."""
    if os.environ.get("TRITON_LIBCUDA_PATH"):
        return
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split(None, 5)[-1].strip() if line.count(" ") >= 5 else ""
                if os.path.basename(path).startswith("libcuda.so"):
                    os.environ["TRITON_LIBCUDA_PATH"] = os.path.dirname(path)
                    return
    except OSError:
        pass


JIT_FOLDER = None  # the build folder TRITON_CACHE_DIR and TORCHINDUCTOR_CACHE_DIR point into


def call_key(args, kwargs):
    """kb_build_modelnew.py's key of a load_inline/load call (keep the two identical)."""
    import hashlib
    text = repr((tuple(args), sorted(kwargs.items())))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def returned_outputs(task, got, who):
    """What a ModelNew's forward returned, as a list, checked before anything reads it: as many
    outputs as the task lists, each a plain tensor (else rejected) of the task's dtype and shape
    on the device (else wrong_output). `who` starts the reasons ("baseline ")."""
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    if len(got) != len(task.outputs):
        raise Verdict("wrong_output", "%sModelNew.forward returns %d outputs, the task lists "
                      "%d" % (who, len(got), len(task.outputs)))
    for o, (g, spec) in enumerate(zip(got, task.outputs)):
        # a plain tensor only, checked before anything reads it: a subclass's
        # __torch_function__ or __torch_dispatch__ runs on every use, so it could do the
        # work only when the evaluator copies the output out (after the timed call), or
        # answer the comparison itself (Run.settle, verify). nn.Parameter keeps the default.
        if isinstance(g, torch.Tensor) and not plain_tensor(g):
            raise Verdict("rejected", '%sModelNew.forward\'s output "%s" (outputs[%d]) is a '
                          'torch.Tensor subclass (%s), not a plain tensor: a subclass can '
                          'defer its work past the timed call or answer the checks itself'
                          % (who, spec["name"], o, type(g).__name__[:60]))
        if not isinstance(g, torch.Tensor) or list(g.shape) != spec["shape"] or \
                g.dtype != torch_dtype(spec["dtype"]) or g.device != DEV:
            raise Verdict("wrong_output", '%sModelNew.forward\'s output "%s" (outputs[%d]) is '
                          '%s%s, the task says %s %s on %s'
                          % (who, spec["name"], o, describe_tensor(g),
                             " on %s" % g.device if isinstance(g, torch.Tensor) else "",
                             spec["dtype"], spec["shape"], DEV))
    return got


class ModuleCandidate:
    """A KernelBench-format candidate built by the compile tier (kb_build_modelnew.py) into the
    cache folder `folder`: build.json, candidate.py, the extensions. The file runs as its own
    module with torch.utils.cpp_extension.load_inline and load replaced by a loader that imports
    the extension the compile tier built for the same call (same SHA-256 of the arguments) from
    the folder: no compiler, no ninja in this process (seccomp traps execve). ModelNew is built
    under torch.manual_seed(MODEL_SEED) from get_init_inputs(), as Model was, so its parameters
    are Model's; it gets the forward inputs only (its own module holds the parameters)."""

    count = 0

    def __init__(self, task, folder, who):
        self.who = who
        bad = "compile_error" if who == "" else "infra_error"
        try:
            with open(os.path.join(folder, "build.json")) as f:
                manifest = json.load(f)
            with open(os.path.join(folder, "candidate.py"), encoding="utf-8") as f:
                source = f.read()
        except (OSError, ValueError) as err:
            raise Verdict(bad, "cannot read the %sbuild of the KernelBench candidate in %s: %s"
                          % (who, folder, first_line(err)))
        if manifest.get("status") != "ok":
            raise Verdict(bad, "the %scandidate's build failed: %s" % (who,
                          manifest.get("reason", "")))
        self.label = manifest.get("label", "")
        self.folder = folder
        self.extensions = manifest.get("extensions", [])
        ext = torch.utils.cpp_extension
        saved = (ext.load_inline, ext.load)
        ext.load_inline = self.loader("load_inline")
        ext.load = self.loader("load")
        self.use_jit_caches()
        ModuleCandidate.count += 1
        path = os.path.join(folder, "candidate.py")
        ns = {"__name__": "kb_candidate_%d" % ModuleCandidate.count, "__file__": path}
        try:
            try:
                seed_all(MODEL_SEED)  # module-level draws as the reference's (exec_reference)
                exec(compile(source, path, "exec"), ns)
            except Verdict:
                raise
            except SystemExit as err:  # the worker goes on: the verdict is this file's
                raise Verdict(bad, "%scandidate.py called sys.exit(%r)" % (who, err.code))
            except BaseException as err:  # KeyboardInterrupt, a class of its own: the same
                raise Verdict(bad, "%scandidate.py raised %s: %s" % (who, type(err).__name__,
                                                                     first_line(err)))
            self.ns = ns  # the file's globals (Surface.keep_baseline)
            model_new = ns.get("ModelNew")
            if not isinstance(model_new, type) or not issubclass(model_new, torch.nn.Module):
                raise Verdict(bad, "%sModelNew is not a torch.nn.Module class" % who)
            seed_all(MODEL_SEED)
            try:
                with on_device():
                    module = model_new(*task.ns["get_init_inputs"]())
                self.module = module.to(DEV)  # training mode, as the task's Model
            except BaseException as err:
                raise Verdict(bad, "%sModelNew(*get_init_inputs()) raised %s: %s (ModelNew "
                              "takes the constructor arguments of the task's Model)"
                              % (who, type(err).__name__, first_line(err)))
        finally:
            ext.load_inline, ext.load = saved
        self.n_fwd = len(task.inputs) - len(task.params or [])
        self.state = list(self.module.parameters()) + list(self.module.buffers())

    @classmethod
    def of_module(cls, task, module):
        """The task's own module (or its torch.compile) called as a ModelNew is: time_torch."""
        self = cls.__new__(cls)
        self.who = ""
        self.label = ""
        self.module = module
        self.n_fwd = len(task.inputs) - len(task.params or [])
        try:
            self.state = list(module.parameters()) + list(module.buffers())
        except AttributeError:
            self.state = list(task.module.parameters()) + list(task.module.buffers())
        return self

    def loader(self, kind):
        def load(*args, **kwargs):
            import importlib.util
            key = call_key(args, kwargs)
            for x in self.extensions:
                if x.get("kind") == kind and x.get("key") == key:
                    path = os.path.join(self.folder, x["path"])
                    name = os.path.basename(path).split(".")[0]
                    spec = importlib.util.spec_from_file_location(name, path)
                    mod = importlib.util.module_from_spec(spec)
                    spec.loader.exec_module(mod)
                    return mod
            raise Verdict("compile_error", "%s(name=%r) was not built by the compile tier: its "
                          "arguments differ from those of the build (a solution's extension "
                          "calls must not depend on where or when they run)"
                          % (kind, kwargs.get("name", args[0] if args else "")))
        return load

    def use_jit_caches(self):
        """Triton's and inductor's caches: this build's (a copy of them in the worker's own
        folder when it is confined: point_jit_caches), so a kernel the compile tier's warm-up
        compiled is found without a compiler. Called with each call, in the timed window: after
        the first time it only sets the two variables kept on the instance (a candidate and its
        same-run baseline take turns)."""
        global JIT_FOLDER
        folder = getattr(self, "folder", None)
        if folder is None or JIT_FOLDER == folder:
            return
        env = getattr(self, "jit_env", None)
        if env is not None:
            os.environ.update(env)
        else:
            point_jit_caches(folder)
            self.jit_env = dict((k, os.environ[k]) for k in ("TRITON_CACHE_DIR",
                                                             "TORCHINDUCTOR_CACHE_DIR"))
        JIT_FOLDER = folder

    def call(self, run, s, outs, who, phase):
        """ModelNew's forward on the forward inputs of set `s`; its outputs are checked for
        number, dtype, shape and device, and held for Run.settle."""
        self.use_jit_caches()
        t = run.task
        ins = t.set_inputs[s][:self.n_fwd]
        # a Python number of get_inputs() reaches forward() as the Python value, as KernelBench
        # passes it to ModelNew and the worker to Model: torch.compile guards on it, so the 0-d
        # tensor would be another graph than the compile tier's warm-up cached (measured on the
        # H200: level 1 task 5's compile seed recompiled, PermissionError)
        args = forward_args(t, t.set_inputs[s])
        legacy = None
        if STREAM is not None:
            # a kernel launched without a stream (<<<grid, block>>>) runs on the legacy default
            # stream, which the worker's (non-blocking) stream does not wait for: ordered both
            # ways, so it sees drawn inputs and is inside the timing events and the checks
            legacy = torch.cuda.default_stream(DEV)
            legacy.wait_stream(STREAM)
        try:
            if getattr(t, "random", False):
                seed_all(RANDOM_SEED)  # the reference's draws (reference())
            got = self.module(*args)
            run.collector_off()  # first: before the worker allocates anything
            if legacy is not None:
                STREAM.wait_stream(legacy)
        except SystemExit as err:
            raise Verdict("crash", "%sModelNew.forward called sys.exit(%r) on input set %d (%s "
                          "call)" % (who or self.who, err.code, s, phase))
        except BaseException as err:  # not only Exception: KeyboardInterrupt ended the worker
            if ran_out(err, run.ooms):  # the device is shared: not the candidate's verdict
                raise Verdict("infra_error", "%sModelNew.forward on input set %d (%s call): %s"
                              % (who or self.who, s, phase, oom_reason(err)), fatal=True,
                              oom=True)
            text = first_line(err)
            raise Verdict("crash", "%sModelNew.forward raised %s on input set %d (%s call): %s"
                          % (who or self.who, type(err).__name__, s, phase, text),
                          fatal=DEV.type == "cuda" and "CUDA" in text)
        got = returned_outputs(t, got, who or self.who)
        run.pending.append((self, outs[s], got, ins))


def evaluate(task, e):
    reply = {"op": "eval", "status": "ok", "reason": "", "sets_checked": 0, "batch": 1,
             "fatal": False}
    run = Run(task, e)
    start = MONOTONIC()
    lib = blib = fn = None
    surface = None
    threads = None  # native_threads() before any code of the candidate ran
    # seconds per phase, for the runner's debug line (runner/evaluator.c, as the C sandbox's):
    # load (imports, the surface, the candidate's module), check (the check calls, integrity,
    # determinism), samples (warm-up and timed samples with the unseen calls between them),
    # fresh (unseen calls after sampling stopped), baseline (the same-run baseline's samples),
    # recheck (integrity and outputs after timing)
    phases = reply["phases"] = {}
    mark = [start]
    LAST_OK.clear()

    def phase(name):
        now = MONOTONIC()
        phases[name] = phases.get(name, 0.0) + now - mark[0]
        mark[0] = now
    try:
        fresh_jit_copies()
        if "kernelbench" in (e["format"], e["baseline_format"]):
            kernelbench_imports()
        if e["format"] == "kernelbench":
            # inductor in this process, never its pool of compiler processes, however the build
            # labelled the file (the variable is read when inductor is first imported)
            os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
            jit_imports(e["library"])
        try:
            CONF.apply()
        except Failure as f:
            raise Verdict("infra_error", str(f), fatal=True)
        distrust(e["library"])
        distrust(e.get("baseline"))
        # before any code of the candidate or the baseline runs
        threads = native_threads()
        surface = Surface(getattr(task, "module", None))
        run.surface = surface
        # the baseline first, recorded before any code of the candidate runs: the candidate
        # could otherwise rewrite it as it is made (Surface.keep_baseline)
        bfn = None
        if e.get("baseline") and e["max_samples"] > 0:
            if e["baseline_format"] == "kernelbench":
                bfn = ModuleCandidate(task, e["baseline"], "baseline ")
                surface.keep_baseline(bfn)
            else:
                blib, bfn = load_library(e["baseline"], "baseline ")
        if e["format"] == "kernelbench":
            fn = ModuleCandidate(task, e["library"], "")
            reply["label"] = fn.label
        else:
            surface.watch_native(threads)
            lib, fn = load_library(e["library"], "")
        phase("load")
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
        determinism(run, fn)
        phase("check")
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

        unseen = Unseen(run, fn, timer, mask)
        # the same-run baseline, and torch eager in this process when asked: one sample of each
        # after each of the candidate's (after its calls on unseen inputs), as kb-sandbox
        # interleaves its baseline (SameRunArm)
        base = SameRunArm(run, bfn, "the baseline's ", e["warmup"]) if bfn is not None else None
        eager = None
        if e["eager"] and getattr(task, "module", None) is not None:
            eager = SameRunArm(run, ModuleCandidate.of_module(task, task.module),
                               "the reference's ", e["warmup"], optional=True)

        def between(count, batch_):
            timed_s = unseen.after(count, batch_)
            for arm in (base, eager):
                if arm is not None:
                    arm.sample(count)
            return timed_s
        samples, batch = sample_loop(run, cand, e["warmup"], start, between)
        phase("samples")
        for name, arm in (("baseline", base), ("eager", eager)):
            if arm is not None:
                phases["samples"] -= arm.seconds
                phases[name] = arm.seconds
        unseen.batch = batch
        while len(unseen.fresh) < FRESH_MIN:  # sampling stopped before the schedule's first
            unseen.take(unseen.plain, unseen.control, unseen.fresh)
        why = unseen.judge() or untimed_work(timer)
        phase("fresh")
        if timer.tail is not None:
            reply["untimed"] = timer.tail
        if why is not None:
            raise Verdict("rejected", why)
        reply["batch"] = batch
        lf, lc, lp = min(unseen.fresh), min(unseen.control), min(unseen.plain)
        reply["unseen"] = {"samples": len(unseen.fresh), "median_us": median(unseen.fresh),
                           "min_us": lf, "control_min_us": lc, "plain_min_us": lp,
                           "ratio_control": lf / lc if lc > 0 else 0.0,
                           "ratio_plain": lf / lp if lp > 0 else 0.0,
                           "unverified": unseen.unverified}
        run.integrity("after the timed calls")
        if e["recheck"]:
            why = run.outputs_pass(task.tim, mask[0])
            if why is not None:
                raise Verdict("rejected", "outputs right on the first call but wrong after "
                              "repeated calls: %s" % why)
        phase("recheck")
        reply["timing"] = stats(samples, e["warmup"])
        speed_of_light(run, reply["timing"].get("median_us", 0.0))
        if base is not None and base.samples:
            reply["baseline_timing"] = stats(base.samples, e["warmup"])
        if eager is not None and eager.samples:
            reply["eager_timing"] = stats(eager.samples, e["warmup"])
        if eager is not None and eager.note:
            reply["eager_note"] = eager.note[:255]
        if e.get("trace"):
            reply["trace_note"] = "kernel trace not recorded: the PyTorch worker has none"
        if e.get("metrics"):
            reply["metrics_note"] = "no hardware metrics: the PyTorch worker reads none"
    except Verdict as v:
        reply["status"] = v.status
        reply["reason"] = v.reason[:255]
        reply["fatal"] = v.fatal
        if v.oom:
            reply["oom"] = True
        reply.pop("timing", None)
    except Failure as f:
        reply["status"] = "infra_error"
        reply["reason"] = str(f)[:255]
    except Exception as err:  # in the worker's own code: its allocations, its checks
        # out of device memory is the shared device's (infra_error); anything else in code
        # that only runs with the candidate's objects about is laid to the candidate, as when
        # it ended the worker (crash) before; a change of the evaluator is rejected below
        oom = ran_out(err, run.ooms)
        if oom:  # the runner makes room (the other worker's tasks) and asks once more
            reply["oom"] = True
        reply["status"] = "infra_error" if oom else "crash"
        reply["reason"] = ("the worker %s" % oom_reason(err) if oom else
                           "the evaluation failed in the worker's code: %s: %s"
                           % (type(err).__name__, first_line(err)))[:255]
        reply["fatal"] = True  # a new worker: the allocator's fragments go with this one
        reply.pop("timing", None)
    finally:
        tampered(surface, reply)
        code_tampered(reply)
        left = threads_left(threads) if threads is not None else []
        if left:
            reply["threads_left"] = left
        if reply["status"] == "ok" and e["max_samples"] > 0:
            LAST_OK[e["key"]] = (fn, lib)  # for the witness that follows (the lib stays loaded)
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


def cpu_list(spec):
    """The CPUs of a list such as "1-15,17" (KB_BUILD_CPUS), as a set; empty when malformed."""
    cpus = set()
    try:
        for part in spec.split(","):
            lo, _, hi = part.partition("-")
            cpus.update(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        return set()
    return cpus


class BuildCpus:
    """While it is entered, the calling thread (and the processes it starts: inductor's
    compilers) runs on the builds' CPUs as well as its own: KB_BUILD_CPUS, which the runner
    sets when it keeps one CPU for timing and gives the rest to its builds (runner/cpus.h).
    The trusted worker compiles torch.compile's module so and times it on its own CPU."""

    def __enter__(self):
        self.own = None
        extra = cpu_list(os.environ.get("KB_BUILD_CPUS", ""))
        if extra and hasattr(os, "sched_setaffinity"):
            try:
                own = os.sched_getaffinity(0)
                os.sched_setaffinity(0, own | extra)
                self.own = own
            except OSError:
                pass
        return self

    def __exit__(self, *exc):
        if self.own is not None:
            os.sched_setaffinity(0, self.own)
        return False


def time_torch(task, e):
    """The "torch" request: times the module in torch eager and torch.compile (compiled once
    per prepared task, in the warm-up) on the candidate's stream, as candidates are timed."""
    reply = {"op": "torch"}
    run = Run(task, e)
    timer = Timer()
    notes = []
    torch.set_grad_enabled(False)  # the module runs under no_grad, as ModelNew candidates do
    if getattr(task, "torch_outs", None) is None:
        task.torch_outs = [[torch.empty(spec["shape"], dtype=torch_dtype(spec["dtype"]),
                                        device=DEV) for spec in task.outputs]
                           for _ in task.sets]
    outs = task.torch_outs
    if not task.tim:
        task.tim = outs  # a trusted worker's task: the unseen samples write here

    def timed_module(fwd):
        """Timed as a ModelNew candidate is (evaluate's cand): the output buffers poisoned
        before a sample, the calls in the window, the outputs copied out (and the returned
        tensors poisoned) after it, so the identity ModelNew = Model measures 1.00x."""
        cand = ModuleCandidate.of_module(task, fwd)

        def one(batch, first, timed):
            for b in range(min(batch, run.n)):
                poison_set(outs, (first + b) % run.n, task)
            if timed:
                timer.begin(run, batch)
            for b in range(batch):
                run.call(cand, (first + b) % run.n, outs, "", "timed")
            if not timed:
                run.sync(first, "warm-up")
                return 0.0
            return timer.stop(batch)
        return one

    def sampled(fwd, warm):
        """sample_loop as evaluate runs it, the calls on unseen inputs interleaved the same way
        (not verified: the module is the reference), so that what they do to the caches and
        the allocator between samples weighs on torch's times as on a candidate's."""
        unseen = Unseen(run, ModuleCandidate.of_module(task, fwd), timer, [0], verify=False)
        samples, _ = sample_loop(run, timed_module(fwd), warm, time.monotonic(), unseen.after)
        return samples

    t0 = MONOTONIC()
    if "eager" in e["modes"]:
        try:
            samples = sampled(task.module, e["warmup"])
            reply["torch_eager"] = stats(samples, e["warmup"])
        except Exception as err:
            notes.append("torch eager failed: %s: %s" % (type(err).__name__, first_line(err)))
    t1 = MONOTONIC()
    if "compile" not in e["modes"]:
        pass
    elif not hasattr(torch, "compile"):
        notes.append("no torch.compile in torch %s" % torch.__version__)
    elif task.compile_error is not None:
        notes.append(task.compile_error)
    else:
        try:
            if task.compiled is None:
                task.compiled = torch.compile(task.module)
            with BuildCpus():  # the compilation (its first call) on the builds' CPUs too
                poison_set(outs, 0, task)
                run.call(ModuleCandidate.of_module(task, task.compiled), 0, outs, "",
                         "compile")
                run.sync(0, "compile")
            samples = sampled(task.compiled, max(e["warmup"], 1))
            reply["torch_compile"] = stats(samples, max(e["warmup"], 1))
        except Exception as err:
            task.compile_error = "torch.compile failed: %s: %s" % (type(err).__name__,
                                                                   first_line(err))
            notes.append(task.compile_error)
    if notes:
        reply["torch_note"] = "; ".join(notes)[:255]
    # seconds: eager's samples, then torch.compile's (its compilation on the first call of a
    # prepared task included), for the runner's debug line
    reply["phases"] = {"eager": t1 - t0, "compile": MONOTONIC() - t1}
    return reply


# ---- the witness: calls timed and outputs read outside the candidate's process --------------

# Every check above runs in the candidate's process, where its code can reach the worker's own
# objects (docs/sandbox.md, "The checks are in the candidate's reach"). At the full tier the
# runner then asks for a witness: the confined worker makes `calls` calls of the candidate on
# inputs drawn from a seed the runner sends with the request (nothing of them exists before),
# writes every output to a file and answers; the runner times the request on its own clock and
# stops the confined process (SIGSTOP) before the trusted worker makes the same calls of the
# task's module on the same draws (timed the same way, its module calls by itself) and compares
# the file with its own outputs. docs/sandbox.md, "The witness".
WITNESS_OUT_BYTES = 64 << 20  # outputs written to the file per witness request, at most
WITNESS_SAMPLE = 1 << 20  # elements kept of an output too large for that (positions drawn)
WITNESS_MAX_CALLS = 256
LAST_OK = {}  # key -> the candidate of the last evaluation that was ok there (confined worker)


def witness_spec(req):
    w = {"key": get(req, "key", "str"),
         "seed": get(req, "seed", "int", lo=1, hi=2**62),
         "calls": get(req, "calls", "int", lo=1, hi=WITNESS_MAX_CALLS),
         "path": get(req, "path", "str"),
         "flush_l2": get(req, "flush_l2", "bool", False, False),
         "check": get(req, "check", "bool", False, False),
         "ask_positions": get(req, "ask_positions", "bool", False, False)}
    if not os.path.isabs(w["path"]):
        raise BadRequest("path", '"path" must be an absolute path')
    return w


def witness_set(task, seed, i):
    """The description of witness call i's inputs: input set i's distribution (cycling) under a
    seed of the runner's, the same in both workers."""
    s = dict(task.all_sets[i % len(task.all_sets)])
    s["seed"] = (seed * 1000003 + 7919 * (i + 1)) % (2**62)
    return s


def witness_positions(task, seed):
    """For each output: None (all of it is written), or the flat positions written (on the
    device) when the outputs of one call are over a third of WITNESS_OUT_BYTES: one position
    drawn from the seed in each of WITNESS_SAMPLE equal strata of the output, so sorted (a
    sorted uniform sample cost 180 ms on the CPU for 6.3 M elements, the strata 20 ms; drawn
    for every call, in both workers). A stratified sample misses a given set of positions no
    more often than a uniform one of as many."""
    per_call = tensor_bytes(task.outputs)
    out = []
    for o, spec in enumerate(task.outputs):
        n = 1
        for d in spec["shape"]:
            n *= d
        if per_call * 3 <= WITNESS_OUT_BYTES or n <= WITNESS_SAMPLE:
            out.append(None)
            continue
        # drawn on the device (both workers run on the same one, so they draw alike): on the
        # CPU this is 20 ms a call, paid in every call of both workers
        g = torch.Generator(device=DEV)
        g.manual_seed((seed + 31 * (o + 1)) % (2**62))
        k = torch.arange(WITNESS_SAMPLE + 1, dtype=torch.int64, device=DEV) * n // WITNESS_SAMPLE
        starts, widths = k[:-1], k[1:] - k[:-1]
        u = torch.rand(WITNESS_SAMPLE, generator=g, dtype=torch.float64, device=DEV)
        out.append(starts + torch.minimum((u * widths).to(torch.int64), widths - 1))
    return out


def ask_positions(sock, nonce, i):
    """The seed of witness call i's sampled positions, asked of the runner after that call has
    returned ({"op": "witness_positions", "call": i} under the request's nonce; the answer
    {"op": "witness_positions", "seed": s}). The runner draws the seeds and gives each only
    when asked, each call once and in order: a candidate's code holds nothing from which it
    could compute the positions compared while its call runs (docs/sandbox.md, "The
    witness")."""
    send(sock, nonce, {"op": "witness_positions", "call": i})
    head = read_exact(sock, 4)
    body = read_exact(sock, struct.unpack(">I", head)[0]) if head is not None else None
    try:
        ans = json.loads(body.decode("utf-8")) if body is not None else None
    except (ValueError, UnicodeDecodeError):
        ans = None
    seed = ans.get("seed") if isinstance(ans, dict) else None
    if (not isinstance(ans, dict) or ans.get("op") != "witness_positions"
            or ans.get("nonce") != nonce or not isinstance(seed, int) or isinstance(seed, bool)
            or not 1 <= seed <= 2**62):
        raise Verdict("infra_error", "the positions of witness call %d: the runner's answer "
                      "is not its positions" % (i + 1))
    return seed


def witness_calls(task, calls, where):
    """As many calls as asked, fewer when their outputs would be over WITNESS_OUT_BYTES (one at
    least; an output sampled at the positions `where` gives it counts its sample)."""
    per_call = sum(tensor_bytes([s]) if p is None else p.numel() * ELEM_SIZE[s["dtype"]]
                   for s, p in zip(task.outputs, where))
    return max(1, min(calls, WITNESS_OUT_BYTES // max(per_call, 1)))


def module_outputs(task, fn, args, who):
    """fn (a ModuleCandidate: ModelNew or the task's module) on `args`: its outputs, checked as
    a timed call's are (returned_outputs)."""
    fn.use_jit_caches()  # a torch.compile or Triton file: its build's caches (no compiler here)
    if getattr(task, "random", False):
        seed_all(RANDOM_SEED)
    return returned_outputs(task, fn.module(*args), who)


def library_outputs(task, fn, ins):
    """A kb_forward library's outputs on `ins` (new tensors)."""
    outs = [torch.empty(spec["shape"], dtype=torch_dtype(spec["dtype"]), device=DEV)
            for spec in task.outputs]
    ret = fn(descriptors(ins, task.inputs), len(task.inputs), descriptors(outs, task.outputs),
             len(task.outputs), STREAM.cuda_stream if STREAM is not None else None)
    if ret != 0:
        raise Verdict("crash", "kb_forward returned %d on a witness call" % ret)
    return outs


def witness(task, w, fn, ask=None):
    """The "witness" request: `calls` calls of `fn` (the confined worker: the candidate of the
    last ok evaluation under the key; the trusted worker: the task's module, TF32 off as for the
    references) on inputs drawn from the seed, each after the L2 flush and a wait for the
    device, its outputs copied to the host; the outputs then written to `path` (call by call,
    output by output, raw bytes; sampled positions only of an output too large). The trusted
    worker also times each module call (a wait for the device after it) and, with "check",
    compares `path` (the confined worker's file, written for the same seed) with its own
    outputs afterwards: `verify_s` is that part, which the runner leaves out of its clock.
    With "ask_positions" the positions of a sampled output are drawn for each call from a seed
    asked of the runner (`ask(i)`, ask_positions) once that call has returned and the device
    is idle, the collector off from then until they are read: no candidate code runs between
    its call's return and the sampling."""
    reply = {"op": "witness", "status": "ok", "reason": ""}
    where = witness_positions(task, w["seed"])
    asked = w["ask_positions"] and ask is not None and any(p is not None for p in where)
    calls = witness_calls(task, w["calls"], where)
    flush = l2_flush_buffer() if w["flush_l2"] else None
    trusted = CONF.trusted
    host = []
    module_s = 0.0
    ooms = device_ooms()
    t0 = MONOTONIC()
    try:
        with torch.no_grad():
            for i in range(calls):
                ins = draw(task, 0, witness_set(task, w["seed"], i))
                if flush is not None:
                    flush.zero_()
                sync()
                a = CLOCK()
                if isinstance(fn, ModuleCandidate):
                    got = module_outputs(task, fn, forward_args(task, ins),
                                         "" if trusted else "on a witness call, ")
                else:
                    got = library_outputs(task, fn, ins)
                sync()
                module_s += CLOCK() - a
                collecting = gc.isenabled()
                try:
                    if asked:  # a finalizer of its objects would otherwise see the positions
                        gc.disable()
                        where = witness_positions(task, ask(i))
                    # contiguous: a module may return a view (x[:, ::2], whose reshape(-1)
                    # is a strided view that cannot be read as bytes); a copy: on the host
                    # .to("cpu") is the tensor itself, and a module that writes every call
                    # into one buffer it returns (an output allocated once) had every call
                    # read as the last one's, an honest candidate beside such a reference, or
                    # such a candidate, rejected
                    host.append([(g.reshape(-1) if p is None else
                                  g.reshape(-1).index_select(0, p)).to("cpu", copy=True)
                                 .contiguous() for g, p in zip(got, where)])
                finally:
                    if asked and collecting:
                        gc.enable()
                del ins, got
    except Verdict as v:
        reply["status"], reply["reason"] = v.status, v.reason[:255]
        return reply
    except Exception as err:
        if (trusted and out_of_memory(err)) or ran_out(err, ooms):
            reply["status"], reply["reason"] = "infra_error", oom_reason(err)[:255]
        else:
            reply["status"] = "infra_error" if trusted else "crash"
            reply["reason"] = ("a witness call raised %s: %s" % (type(err).__name__,
                                                                  first_line(err)))[:255]
        return reply
    if not trusted:  # the candidate's calls: its code may have rewritten the worker's
        code_tampered(reply)
        if reply["status"] != "ok":
            return reply
    mine = w["path"] if not trusted else os.path.join(CONF.rw, "witness-reference.bin")
    try:
        with open(mine, "wb") as f:
            for outs in host:
                for h in outs:
                    f.write(h.view(torch.uint8).numpy().tobytes())
    except OSError as e:  # its folder's disk full or failing: the node's fault (write_errno)
        reply["status"] = "infra_error"
        reply["reason"] = ("the witness file cannot be written: %s" % e.strerror)[:255]
        reply["write_errno"] = e.errno or 0
        return reply
    reply.update(calls=calls, module_us=module_s * 1e6 / calls,
                 sampled=sum(p is not None for p in where), timed_s=MONOTONIC() - t0)
    if trusted and w["check"]:
        v0 = MONOTONIC()
        why = witness_compare(task, w["path"], host)
        if why is not None:
            reply["status"], reply["reason"] = "rejected", why[:255]
        reply["verify_s"] = MONOTONIC() - v0
    return reply


def witness_compare(task, path, host):
    """None when the file at `path` holds the outputs in `host` within the task's tolerance,
    else why not."""
    want = sum(h.numel() * h.element_size() for outs in host for h in outs)
    try:
        # the folder is the candidate's process's: a link, a FIFO (which would block the
        # read) or a device there is not its outputs
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return "the witness calls' outputs are not a regular file"
            data = f.read(want + 1)
    except OSError as err:
        return "the witness calls' outputs cannot be read: %s" % first_line(err)
    if len(data) != want:
        return ("the witness calls' outputs are %d bytes, %d expected" % (len(data), want))
    buf = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    at = 0
    for i, outs in enumerate(host):
        for o, (h, spec) in enumerate(zip(outs, task.outputs)):
            n = h.numel() * h.element_size()
            got = buf[at:at + n].view(h.dtype)
            at += n
            bad, checked, first, g, e, _, _ = compare(got, h, spec["dtype"], task.atol,
                                                      task.rtol)
            if bad:
                return ('wrong on inputs drawn after the runner asked, read outside its '
                        'process: output "%s" of witness call %d of %d: %s'
                        % (spec["name"], i + 1, len(host), describe(bad, checked, first, g, e)))
    return None


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
         "metrics": get(req, "metrics", "bool", False, False),
         "eager": get(req, "eager", "bool", False, False),
         "format": get(req, "format", "str", False, "native"),
         "baseline_format": get(req, "baseline_format", "str", False, "native")}
    # "torch": which of eager and torch.compile to time (both by default; the runner asks
    # for them one at a time, so that a compilation that runs out of time keeps eager's)
    e["modes"] = ("eager", "compile")
    if torch_op and "modes" in req:
        m = req["modes"]
        if (not isinstance(m, list) or not m
                or any(x not in ("eager", "compile") for x in m)):
            raise BadRequest("modes", '"modes" must be a non-empty array of "eager" and '
                             '"compile"')
        e["modes"] = tuple(m)
    for k in ("format", "baseline_format"):
        if e[k] not in FORMATS:
            raise BadRequest(k, '"%s" must be "native" or "kernelbench"' % k)
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
        nonce = None
        head = read_exact(sock, 4)
        if head is None:
            return 0
        n = struct.unpack(">I", head)[0]
        if n > MAX_FRAME:
            send(sock, nonce, {"op": "error", "field": "", "reason": "frame of %d bytes is "
                               "over the 16 MiB limit" % n})
            return 1
        body = read_exact(sock, n)
        if body is None:
            return 0
        try:
            req = json.loads(body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as err:
            send(sock, nonce, {"op": "error", "field": "", "reason": "not a JSON object: %s" % err})
            continue
        if not isinstance(req, dict) or not isinstance(req.get("op"), str):
            send(sock, nonce, {"op": "error", "field": "" if not isinstance(req, dict) else "op",
                               "reason": "a request must be a JSON object with a string "
                                         "\"op\""})
            continue
        op = req["op"]
        nonce = req.get("nonce") if isinstance(req.get("nonce"), str) else None
        try:
            status = handle(sock, nonce, op, req, (backend, ordinal), prepared, used, use, touch)
        except BadRequest as b:
            send(sock, nonce, {"op": "error", "field": b.field, "reason": b.reason})
            continue
        if status is not None:
            return status


def handle(sock, nonce, op, req, device, prepared, used, use, touch):
    """Answers one request of serve()'s: None to go on, or serve()'s exit status. Its own
    function so that nothing a request used outlives it: in serve()'s loop, the last request's
    `task` (and a witness's `fn`) stayed bound until the next request of that kind, so a task
    dropped by drop_if_large or a "release" kept its input sets, references and outputs on the
    device (on an H100, 2026-12-07: the trusted worker held 8.0 GiB beyond its prepared tasks'
    0.0 after softmax's torch request, and the runner stopped and restarted it, six times in
    140 s of the suite campaign). Raises BadRequest."""
    if op == "hello":
        send(sock, nonce, hello(*device))
    elif op == "quit":
        send(sock, nonce, {"op": "bye"})
        return 0
    elif op == "prepare":
        key = get(req, "key", "str")
        t0 = time.monotonic()
        # a task prepared for the witness only is prepared again, whole, for anything else
        if key in prepared and (module_only(req) or not prepared[key].module_only):
            touch(key)
            send(sock, nonce, {"op": "prepare", "ok": True, "key": key,
                               "cached": True, "seconds": 0.0,
                               "draw_s": prepared[key].draw_s})
            return None
        reply = do_prepare(req, prepared, used)
        if reply["ok"]:
            touch(key)
        reply["seconds"] = time.monotonic() - t0
        send(sock, nonce, reply)
        if reply.get("fatal"):  # state a task's code left that cannot be set back
            return 3
    elif op == "eval":
        if CONF.trusted:
            raise BadRequest("op", '"op": this worker is trusted (--trusted): it times '
                             'torch eager and torch.compile and never loads a '
                             'candidate; send "eval" to the confined worker')
        e = eval_spec(req)
        task = use(e["key"])
        room_to_run(task, e["key"], prepared)
        t0 = time.monotonic()
        reply = evaluate(task, e)
        reply["seconds"] = time.monotonic() - t0
        memory_line(task, e["key"], "eval", prepared)
        if task.damaged:
            del prepared[e["key"]]
        send(sock, nonce, reply)
        if reply["fatal"]:
            return 3
    elif op == "release":
        send(sock, nonce, do_release(req, prepared))
    elif op == "witness":
        w = witness_spec(req)
        task = use(w["key"])
        if CONF.trusted:
            fn = ModuleCandidate.of_module(task, task.module)
        elif w["key"] in LAST_OK:
            fn = LAST_OK[w["key"]][0]
        else:
            raise BadRequest("key", '"key": the last evaluation was not an ok timed '
                             'one of this task (a witness follows one)')
        if w["check"] and not CONF.trusted:
            raise BadRequest("check", '"check": only the trusted worker compares')
        t0 = time.monotonic()
        reply = witness(task, w, fn, lambda i: ask_positions(sock, nonce, i))
        reply["seconds"] = time.monotonic() - t0
        send(sock, nonce, reply)
    elif op == "torch":
        if not CONF.trusted:
            raise BadRequest("op", '"op": "torch" goes to the trusted worker '
                             '(--trusted): torch.compile compiles in subprocesses, '
                             'which this confined worker may not start')
        e = eval_spec(req, torch_op=True)
        task = use(e["key"])
        if task.module_only:
            raise BadRequest("key", '"key": that task was prepared for the witness only '
                             '("module_only"): prepare it again without it to time torch')
        t0 = time.monotonic()
        reply = time_torch(task, e)
        reply["seconds"] = time.monotonic() - t0
        memory_line(task, e["key"], "torch", prepared)
        drop_if_large(prepared, e["key"])
        send(sock, nonce, reply)
    else:
        raise BadRequest("op", 'unknown request "%s"' % op)
    return None


def do_release(req, prepared):
    """The "release" request: drops every prepared task but the one under "keep" (optional) and
    gives the cached device memory back, so that the runner's other worker (the confined one
    and the trusted one share the GPU) can prepare a task this one's tasks leave no room for."""
    keep = get(req, "keep", "str", False, "")
    dropped = [k for k in prepared if k != keep]
    for k in dropped:
        del prepared[k]
        LAST_OK.pop(k, None)  # a dropped task's last candidate (a ModelNew holds its weights)
    give_back_memory()
    # the tasks still alive after the collection: the kept one, or none; more is a dropped task
    # something still holds (docs/sandbox.md, "release")
    reply = {"op": "release", "dropped": len(dropped), "free_bytes": 0,
             "tasks_alive": len(TASKS_ALIVE)}
    if DEV.type == "cuda":
        reply["free_bytes"], reply["total_bytes"] = torch.cuda.mem_get_info(DEV)
        # what this worker holds beyond its kept task's tensors: torch's own (a leak the
        # runner ends by starting a new worker, docs/sandbox.md)
        reply["held_bytes"] = torch.cuda.memory_reserved(DEV)
        reply["kept_bytes"] = task_bytes(prepared[keep]) if keep in prepared else 0
    return reply


def memory_line(task, key, op, prepared):
    """After an "eval" or "torch" request on CUDA of a task one of whose input sets takes over a
    sixteenth of the device: writes to stderr (the runner's log) what torch held at the
    request's peak against what the plan counts (sets_that_fit x set_bytes + peak_bytes), then
    starts torch's peak counters again. KernelBench's level-1 norms (7 GiB tensors) ran out of an
    80 GB card holding 63-76 GiB against 49 GiB planned; these lines say, run by run, how far the
    plan is from what a request really holds (allocated: live tensors; reserved: with torch's
    cached blocks)."""
    if DEV is None or DEV.type != "cuda" or set_bytes(task) * 16 < memory_total():
        return
    gib = float(1 << 30)
    kept = sum(len(t.sets) * set_bytes(t) for k, t in prepared.items() if k != key)
    print("kb-sandbox-torch: memory, task %s after %s: torch allocated at most %.2f GiB, "
          "reserved at most %.2f GiB (now %.2f and %.2f); planned %d set(s) x %.2f + peak %.2f "
          "= %.2f GiB, other tasks kept %.2f GiB, of %.1f GiB"
          % (key[:12], op, torch.cuda.max_memory_allocated(DEV) / gib,
             torch.cuda.max_memory_reserved(DEV) / gib, torch.cuda.memory_allocated(DEV) / gib,
             torch.cuda.memory_reserved(DEV) / gib, len(task.sets), set_bytes(task) / gib,
             peak_bytes(task) / gib, prepare_bytes(task) / gib, kept / gib,
             memory_total() / gib), file=sys.stderr, flush=True)
    torch.cuda.reset_peak_memory_stats(DEV)


def room_to_run(task, key, prepared):
    """Before an evaluation on the device: drops the other prepared tasks while the free device
    memory is under what a call of this one may allocate (its outputs and one set of inputs,
    twice, for the candidate's intermediates), so that a candidate's forward does not run out
    of memory because of tasks this worker merely keeps (measured on the H200: the identity of
    KernelBench level 1's HardSigmoid, 6 GiB outputs, ended "CUDA out of memory" beside three
    kept tasks)."""
    if DEV.type != "cuda":
        return
    need = 2 * (tensor_bytes(task.outputs) + tensor_bytes(task.inputs)) + (512 << 20)
    others = [k for k in prepared if k != key]
    while others and torch.cuda.mem_get_info(DEV)[0] < need:
        del prepared[others.pop(0)]
        give_back_memory()


def give_back_memory():
    """Frees what dropped tasks held on the device: dynamo's caches first, when torch.compile
    ran in this process (its compiled frames and guards keep what they were compiled for,
    the task's module and tensors among them: measured on the H200 at 1967d7a, both workers of
    a KernelBench level 1 campaign, after a compiled module ran, held a whole dropped task,
    24-56 GiB, with nothing prepared, and the runner replaced them after every evaluation);
    then a collection (a task, its compiled module and torch.compile's frames can hold one
    another in cycles, which reference counting alone never frees; a trusted worker with no
    task prepared held 85-105 GiB before it); then torch's cached blocks back to the driver.
    dynamo's reset drops compiled code only (a kept task's compiled module compiles again on
    its next call, from inductor's caches), not the patches of its first use
    (dynamo_first_use)."""
    dynamo = sys.modules.get("torch._dynamo")
    if dynamo is not None and hasattr(dynamo, "reset"):
        try:
            dynamo.reset()
        except Exception as e:  # the collection below still runs
            print("torch._dynamo.reset failed: %s: %s" % (type(e).__name__, first_line(e)),
                  file=sys.stderr)
    gc.collect()
    if DEV is not None and DEV.type == "cuda":
        torch.cuda.empty_cache()


def task_bytes(task):
    """Device bytes the tensors of a prepared task hold: its input sets, references, output
    buffers and torch's outputs (shared storage counted once)."""
    seen, total = set(), 0
    for group in (task.set_inputs, task.refs, task.chk, task.tim,
                  getattr(task, "torch_outs", None) or []):
        for ts in group:
            for t in ts:
                if not isinstance(t, torch.Tensor):
                    continue
                st = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
                if st.data_ptr() in seen:
                    continue
                seen.add(st.data_ptr())
                total += st.nbytes()
    return total


def out_of_memory(err):
    """1 when `err` (a RuntimeError) is the device being out of memory."""
    oom = getattr(getattr(torch, "cuda", None), "OutOfMemoryError", None)
    return (oom is not None and isinstance(err, oom)) or "out of memory" in str(err)


def device_ooms():
    """The caching allocator's count of allocations it could not make on the device (CUDA), or
    None (the host: no device to share)."""
    if DEV is None or DEV.type != "cuda":
        return None
    try:
        return int(torch.cuda.memory_stats(DEV).get("num_ooms", 0))
    except Exception:
        return None


def ran_out(err, before):
    """Whether `err`, raised while candidate code ran, is the shared device out of memory: an
    out-of-memory error (out_of_memory) while the allocator's count of failed allocations
    (device_ooms) grew since `before`, taken before the candidate's code ran. Its text alone is
    the candidate's to write: relu_fake_oom.py raised RuntimeError("CUDA out of memory. ...")
    from forward and was infra_error (the worker replaced, the item retried up to
    max_attempts) instead of crash (found 2026-12-07). Never on the host."""
    now = device_ooms() if before is not None else None
    return out_of_memory(err) and now is not None and now > before


def oom_reason(err):
    """What a reason says of `err`, the device out of memory: what was asked, what was free and
    what this worker holds (torch's own message runs to several lines and its process list
    past a reason's 255 characters)."""
    asked = re.search(r"[Tt]ried to allocate ([0-9.]+ [KMGT]iB)", str(err))
    free = total = held = 0
    if DEV.type == "cuda":
        try:
            free, total = torch.cuda.mem_get_info(DEV)
            held = torch.cuda.memory_reserved(DEV)
        except RuntimeError:
            pass
    gib = 1 << 30
    if DEV.type == "cuda":
        memory_census(held)
    return ("ran out of device memory (asked %s; %.1f of %.1f GiB free, %.1f GiB held by this "
            "worker; the rest by the runner's other worker, builds or other processes)"
            % (asked.group(1) if asked else "an allocation", free / gib, total / gib, held / gib))


def memory_census(held):
    """Writes to stderr (the runner's log) what holds this worker's device memory when it ran
    out: torch's allocated and reserved bytes, the live CUDA tensors found by the collector
    (storage counted once) and the largest of them, so that memory held beyond what the plan
    counts (peak_bytes; KernelBench level 1's norms on an 80 GB card held 63-76 GiB) can be
    told apart: live tensors (whose shapes say whose), or torch's cache of freed blocks."""
    gib = 1 << 30
    seen, live, n = {}, 0, 0
    with warnings.catch_warnings():  # looking at deprecated objects warns (torch 2.11)
        warnings.simplefilter("ignore")
        try:
            for obj in gc.get_objects():
                # one object at a time: the collector also holds dead weak proxies
                # (ReferenceError on any look) and dynamo's fake tensors (no storage to read),
                # measured on an H100 with torch.compile seeds in the process
                try:
                    if type(obj).__name__ in ("weakproxy", "weakcallableproxy") or \
                            not isinstance(obj, torch.Tensor) or not obj.is_cuda:
                        continue
                    st = obj.untyped_storage() if hasattr(obj, "untyped_storage") else \
                        obj.storage()
                    ptr = st.data_ptr()
                    if ptr in seen:
                        continue
                    seen[ptr] = (st.nbytes(), tuple(obj.shape),
                                 str(obj.dtype).replace("torch.", ""))
                except (ReferenceError, RuntimeError, NotImplementedError, TypeError):
                    continue
                live += seen[ptr][0]
                n += 1
            top = sorted(seen.values(), reverse=True)[:6]
            print("kb-sandbox-torch: out of device memory: torch allocated %.2f GiB, reserved "
                  "%.2f GiB; %d live CUDA tensors the collector sees, %.2f GiB; largest: %s"
                  % (torch.cuda.memory_allocated(DEV) / gib, held / gib, n, live / gib,
                     ", ".join("%.2f GiB %s %s" % (b, list(sh), dt) for b, sh, dt in
                               ((b / gib, sh, dt) for b, sh, dt in top))),
                  file=sys.stderr)
        except Exception as e:  # a census that fails leaves the reason as it is
            print("kb-sandbox-torch: memory census failed: %s: %s"
                  % (type(e).__name__, first_line(e)), file=sys.stderr)


def drop_if_large(prepared, key):
    """The trusted worker after timing the task under `key`: drops it when it holds over an
    eighth of the device (its input sets, references and torch's outputs), so that the
    confined worker, which evaluates the same task next, has the room (measured on the H200,
    KernelBench level 1 at 6 GiB a tensor: the trusted worker's 37-51 GiB left the confined one
    out of memory). It is prepared again for the next timing."""
    task = prepared.get(key)
    if task is None or DEV.type != "cuda":
        return
    n = len(task.sets)
    held = n * tensor_bytes(task.inputs) + 2 * n * tensor_bytes(task.outputs)
    if held * 8 > torch.cuda.mem_get_info(DEV)[1]:
        del prepared[key]
        give_back_memory()


def prepare_bytes(task):
    """Device bytes a task (its inputs, outputs and sets, as the prepare request gives them)
    takes prepared and evaluated: every input set it will keep (sets_that_fit, set_bytes each;
    none when prepared for the witness only) and what an evaluation holds beside them at its
    peak (peak_bytes)."""
    kept = 0 if getattr(task, "module_only", False) else sets_that_fit(task)
    return kept * set_bytes(task) + peak_bytes(task)


def make_room(task, prepared, used):
    """Before a CUDA prepare of `task`: drops this worker's least recently used prepared tasks
    while the device's free memory is under what the new one needs (measured on the H200 with
    KernelBench level 1: the runner's two workers and the compile tier's builders share one
    GPU; a worker keeping four tasks of 10-30 GiB each made the next prepare fail with out of
    memory)."""
    if DEV.type != "cuda":
        return
    need = prepare_bytes(task) * 5 // 4 + (256 << 20)
    while True:
        free = torch.cuda.mem_get_info(DEV)[0]
        if free >= need or not prepared:
            return
        oldest = min(prepared, key=lambda k: used.get(k, 0))
        del prepared[oldest]
        give_back_memory()


def flag_setters():
    """How each of surface_flags() is set back after a task's code changed it: {name: setter};
    a flag without one (a mode left entered, an aten kernel registered) cannot be."""
    b = torch.backends
    return {"torch.backends.cuda.matmul.allow_tf32":
            lambda v: setattr(b.cuda.matmul, "allow_tf32", v),
            "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction":
            lambda v: setattr(b.cuda.matmul, "allow_fp16_reduced_precision_reduction", v),
            "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction":
            lambda v: setattr(b.cuda.matmul, "allow_bf16_reduced_precision_reduction", v),
            "torch.backends.cudnn.allow_tf32": lambda v: setattr(b.cudnn, "allow_tf32", v),
            "torch.get_float32_matmul_precision()": torch.set_float32_matmul_precision,
            "torch.get_default_dtype()": torch.set_default_dtype}


# what a task's code (reference.py: its top level, Model(), get_inputs(), forward()) may not
# change at prepare, besides surface_flags(): among process_settings(), the one that changes
# what later tasks compute
TASK_FLAGS = ("torch.set_flush_denormal",)


# torch's operator modules, whose public names a task's code must leave as it found them
TORCH_API = ("torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.linalg",
             "torch.fft", "torch.special")


def torch_api():
    """The public names of TORCH_API, torch.Tensor and torch.nn's classes with their values:
    [(owner's name, owner, {name: value})] (as kb-import-kernelbench's torch_names)."""
    owners = [(n, sys.modules[n]) for n in TORCH_API if sys.modules.get(n) is not None]
    owners += [("torch.Tensor", torch.Tensor)]
    owners += [("torch.nn." + n, c) for n, c in vars(torch.nn).items() if isinstance(c, type)]
    return [(name, owner, {k: v for k, v in vars(owner).items() if not k.startswith("_")})
            for name, owner in owners]


# torch's own code that rebinds a public name the first time it is imported: the dynamo
# disable wrapper (torch._disable_dynamo, torch._dynamo.disable). torch 2's torch._dynamo
# wraps torch.manual_seed with it when first imported, which any task's code can cause (on an
# H100, KernelBench's l1_35-l1_39, l3_3 and l3_45 were refused "reference.py replaces
# torch.manual_seed at prepare"). The wrapper only keeps dynamo from compiling the function:
# what it computes is the same.
TORCH_OWN_WRAPPERS = ("_compile.py", "_dynamo" + os.sep)


def torch_own_rebinding(old, new):
    """Whether `new` is `old` wrapped by one of TORCH_OWN_WRAPPERS: its code in that file or
    folder of the installed torch and `old` on its __wrapped__ chain. Any other wrapper
    (torch.autocast's, which changes the dtype a function computes in, among them) or
    replacement is a change of the task's."""
    code = getattr(new, "__code__", None)
    if code is None:
        return False
    root = os.path.dirname(os.path.realpath(torch.__file__)) + os.sep
    path = os.path.realpath(code.co_filename)
    if not any(path.startswith(root + w) for w in TORCH_OWN_WRAPPERS):
        return False
    for _ in range(8):
        new = getattr(new, "__wrapped__", None)
        if new is None:
            return False
        if new is old:
            return True
    return False


def api_left(before):
    """Sets back every name of torch_api() `before` that a task's code replaced or added since
    (a submodule imported meanwhile is not a change, nor torch's own rebinding when it imports
    one: torch_own_rebinding, kept); returns the first as "replaces
    torch.nn.functional.gelu", or None. A hand-written reference.py that replaced F.gelu at its
    top level changed the references of every task prepared after it in the same worker."""
    why = None
    for name, owner, names in before:
        for k, v in list(vars(owner).items()):
            if k.startswith("_") or (k in names and names[k] is v):
                continue
            if k in names and torch_own_rebinding(names[k], v):
                continue
            if k not in names and isinstance(v, type(sys)):
                continue
            if why is None:
                why = "%s %s.%s" % ("replaces" if k in names else "adds", name, k)
            if k in names:
                setattr(owner, k, names[k])
            else:
                delattr(owner, k)
    return why


def task_left(before):
    """After a prepare: sets back what the task's code changed of the process-wide state that
    `before` ((surface_flags(), perf_settings()) taken before it) recorded. Returns (why, fatal):
    `why` names the first change of surface_flags() or TASK_FLAGS (what makes later tasks'
    references compute otherwise: the default dtype, TF32, denormals flushed), None when only
    speed and process settings moved (set back silently, as after a candidate's evaluation);
    `fatal` when one cannot be set back (the worker exits after its reply). The worker runs
    several tasks in one process: a hand-written bundle whose reference.py called
    torch.set_default_dtype(torch.float64) at its top level made every task prepared after it
    in the same worker fail ("input "x" is float64, the task says f32"), and one calling
    torch.set_flush_denormal(True) changed their references."""
    flags, perf = before
    why, fatal = None, False

    def note(name, was, now):
        return ("reference.py changes %s (%s, then %s) at prepare: the worker runs other tasks in "
                "this process, so a task's code (its top level, Model(), get_inputs(), "
                "forward()) must leave it as it found it" % (name, was, now))
    for (name, was, put), (_, now, _) in zip(perf, perf_settings()):
        if now != was:
            if name in TASK_FLAGS and why is None:
                why = note(name, was, now)
            try:
                put(was)
            except Exception:
                fatal = True
    setters = flag_setters()
    for (name, was), (_, now) in zip(flags, surface_flags()):
        if now is not was and now != was:
            if why is None:
                why = note(name, "unset" if was is MISSING else was,
                           "unset" if now is MISSING else now)
            try:
                setters[name](was)
            except Exception:  # no setter (a mode, an aten kernel), or it refused
                fatal = True
    return why, fatal


def threads_of_task(known, oracle):
    """Python threads running now that are not in `known` (thread idents) and that a task's code
    left (reference.py's frames on their stack, or what foreign_frames counts as a candidate's:
    a target that is not Python code), each as "file:line" of its top frame, at most 3."""
    frames = current_frames()
    try:
        out = []
        for ident, top in frames.items():
            if ident in known:
                continue
            frame, mine = top, False
            while frame is not None and not mine:
                mine = real_path(frame.f_code.co_filename) == oracle
                frame = frame.f_back
            if mine or foreign_frames({ident: top}, ()):
                out.append("%s:%d" % (os.path.basename(top.f_code.co_filename), top.f_lineno))
        return out[:3]
    finally:
        frames.clear()


def do_prepare(req, prepared, used):
    before = (surface_flags(), perf_settings())
    frames = current_frames()
    known = frozenset(frames)
    frames.clear()
    api = torch_api()
    reply = prepare_reply(req, prepared, used)
    why, fatal = task_left(before)
    patched = api_left(api)
    if patched and why is None:
        why = ("reference.py %s at prepare: the worker runs other tasks in this process, and "
               "their references would run it; a task's code must leave torch as it found it "
               "(call a function of its own)" % patched)
    left = threads_of_task(known, real_path(req.get("oracle") or ""))
    if left and why is None:
        # the candidates evaluated next in this process would be blamed for it ("a thread it
        # started was still running"), an honest one rejected; it may run on: a new worker
        why, fatal = ("reference.py leaves a thread running after prepare (at %s): the worker "
                      "evaluates candidates in this process, and they would be blamed for it; "
                      "join it before forward() returns" % ", ".join(left)), True
    if why is not None or fatal:
        prepared.pop(req["key"], None)
        reply = {"op": "prepare", "ok": False, "fatal": fatal, "oom": False,
                 "reason": (why or "reference.py changed the worker's state at prepare past "
                            "setting back")[:255]}
    return reply


def prepare_reply(req, prepared, used):
    key = req["key"]
    plan = Task()  # field errors before any work
    plan.inputs = tensors(req, "inputs")
    plan.outputs = tensors(req, "outputs")
    plan.sets = input_sets(req)
    plan.module_only = module_only(req)
    get(req, "oracle", "str")
    for k in ("atol", "rtol"):
        get(req, k, "num", lo=0, hi=1e300)
    get(req, "sol_input_fraction", "num", False, 1.0, 0, 1)
    try:
        if not plan.module_only:
            sets_plan(plan)  # a task that does not fit even alone drops no other task
    except Failure as f:
        return {"op": "prepare", "ok": False, "reason": str(f)[:255], "fatal": False,
                "oom": False}
    prepared.pop(key, None)  # prepared for the witness only: replaced by the whole task
    while len(prepared) >= MAX_PREPARED:
        oldest = min(prepared, key=lambda k: used.get(k, 0))
        del prepared[oldest]
    make_room(plan, prepared, used)
    for attempt in (0, 1):
        try:
            task = prepare_task(req)
            prepared[key] = task
            reply = {"op": "prepare", "ok": True, "key": key, "cached": False,
                     "sets": len(task.sets), "draw_s": task.draw_s}
            if task.sets_note:
                reply["sets_note"] = task.sets_note[:255]
            return reply
        except Failure as f:  # an input set's draw may itself run out of device memory
            return {"op": "prepare", "ok": False, "reason": str(f)[:255], "fatal": False,
                    "oom": "out of memory" in str(f)}
        except RuntimeError as err:  # out of device memory: drop the others, try once more
            if attempt == 0 and prepared:
                prepared.clear()
                give_back_memory()
                continue
            return {"op": "prepare", "ok": False, "reason": "%s: %s" % (
                type(err).__name__, first_line(err))[:255], "fatal": False,
                "oom": out_of_memory(err)}


USAGE = ("usage: kb_sandbox_torch.py --backend host|cuda --device N --dir DIR --parent PID "
         "[--ro PATH]... [--trusted [--jit DIR]]")


def parse_args(argv):
    args = {"backend": "host", "device": 0, "dir": "", "parent": 0, "ro": [], "trusted": False,
            "jit": None}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--trusted":
            args["trusted"] = True
            i += 1
        elif a == "--ro" and i + 1 < len(argv):
            args["ro"].append(argv[i + 1])
            i += 2
        elif a == "--jit" and i + 1 < len(argv):
            args["jit"] = argv[i + 1]
            i += 2
        elif a in ("--backend", "--device", "--dir", "--parent") and i + 1 < len(argv):
            v = argv[i + 1]
            try:
                args[a[2:]] = int(v) if a in ("--device", "--parent") else v
            except ValueError:
                print("kb_sandbox_torch: %s must be an integer, not \"%s\"" % (a, v),
                      file=sys.stderr)
                sys.exit(EXIT_USAGE)
            i += 2
        else:
            print(USAGE, file=sys.stderr)
            sys.exit(EXIT_USAGE)
    if args["backend"] not in ("host", "cuda"):
        print("kb_sandbox_torch: --backend must be host or cuda", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    if args["jit"] is not None and not args["trusted"]:
        print("kb_sandbox_torch: --jit is for a trusted worker only", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    return args


def reference_caches(folder):
    """A trusted worker's Triton and inductor caches in `folder` (--jit: the runner's
    `<cache>/reference.jit`), where the compile pool compiled the task's module ahead
    (kb_build_modelnew.py --reference), so that its torch.compile timing finds the compilation
    there (docs/sandbox.md, "torch.compile compiled ahead"). Set before torch is imported. Only
    trusted processes write there: this worker and the reference builds."""
    for var, sub in (("TRITON_CACHE_DIR", "triton"), ("TORCHINDUCTOR_CACHE_DIR", "inductor")):
        path = os.path.join(folder, sub)
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as e:  # its own caches then, as without --jit
            print("reference caches %s: %s" % (path, e), file=sys.stderr)
            return
        os.environ[var] = path


def main(argv):
    global CONF
    args = parse_args(argv)
    CONF = Confinement(args)  # the library is loaded now: its absence is a start failure
    if args["jit"]:
        reference_caches(args["jit"])
    sock = setup(args)
    open_device(args["backend"], args["device"])
    Surface.parse()  # its own source, read before confinement
    try:
        return serve(sock, args["backend"], args["device"])
    except (BrokenPipeError, ConnectionResetError):
        return 1


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(code)
