#!/usr/bin/python3
"""The built-in CUDA suite's PyTorch references (tasks/cuda/*/torch_reference.py, the task.json
field "torch_reference") against the tasks' oracles, on the CPU (ctest tasks_torch_refs):

  - get_inputs() gives the CUDA task's inputs, dtypes and shapes (checked without allocating:
    torch's random factories are replaced by meta tensors while it runs);
  - the module agrees, within the CUDA task's tolerance, with the C oracle of the host task of the
    same operator (tasks/host/<name>; rowsum_small: row_sum), built here with the C compiler and
    called through the kernel ABI (kb_kernel.h), on that host task's input set 0 at its sizes
    (the CUDA sizes are 0.5 to 1 GiB per tensor, too large for CI; the operators do not depend on
    the sizes). Labels of cross_entropy are drawn in [0, classes), the rest uniform [low, high)
    of set 0.

usage: check_torch_refs.py REPO_ROOT CC
"""
import ctypes
import json
import os
import subprocess
import sys
import tempfile

import torch

DTYPES = {"f32": (torch.float32, 0), "f16": (torch.float16, 1), "f64": (torch.float64, 3),
          "i32": (torch.int32, 4), "i64": (torch.int64, 5)}
TWIN = {"rowsum_small": "row_sum"}
MAX_DIMS = 8


class KbTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int),
                ("shape", ctypes.c_int64 * MAX_DIMS)]


failures = []


def check(cond, what):
    print("%s: %s" % ("ok" if cond else "FAIL", what))
    if not cond:
        failures.append(what)


def load(path):
    ns = {"__name__": "kb_torch_reference", "__file__": path}
    with open(path, encoding="utf-8") as f:
        exec(compile(f.read(), path, "exec"), ns)
    return ns


def meta_inputs(ns):
    """get_inputs() with torch.rand/randn/randint making meta tensors: shapes without memory."""
    saved = torch.rand, torch.randn, torch.randint

    def shape(s):
        return tuple(s[0]) if len(s) == 1 and isinstance(s[0], (tuple, list)) else tuple(s)

    def fake(*s, dtype=torch.float32, **_):
        return torch.empty(shape(s), dtype=dtype, device="meta")

    def fake_int(*a, dtype=torch.int64, **_):
        return torch.empty(tuple(a[-1]), dtype=dtype, device="meta")
    torch.rand, torch.randn, torch.randint = fake, fake, fake_int
    try:
        return ns["get_inputs"]()
    finally:
        torch.rand, torch.randn, torch.randint = saved


def abi(tensors):
    arr = (KbTensor * len(tensors))()
    for i, t in enumerate(tensors):
        arr[i].data = t.data_ptr()
        arr[i].dtype = [v[1] for v in DTYPES.values() if v[0] == t.dtype][0]
        arr[i].ndim = t.dim()
        for d, n in enumerate(t.shape):
            arr[i].shape[d] = n
    return arr


def run_oracle(lib, ins, outs):
    a, b = abi(ins), abi(outs)
    return lib.kb_forward(a, len(ins), b, len(outs), None)


def draw(spec, s, g, classes):
    dtype = DTYPES[spec["dtype"]][0]
    if dtype in (torch.int32, torch.int64):
        return torch.randint(0, classes, tuple(spec["shape"]), generator=g, dtype=dtype)
    x = torch.empty(tuple(spec["shape"]), dtype=torch.float32).uniform_(s["low"], s["high"],
                                                                        generator=g)
    return x.to(dtype)


def check_task(root, name, cc, tmp):
    cuda = json.load(open(os.path.join(root, "tasks/cuda", name, "task.json")))
    ref = cuda.get("torch_reference")
    check(ref == "torch_reference.py", "%s: task.json names its torch_reference" % name)
    if ref is None:
        return
    ns = load(os.path.join(root, "tasks/cuda", name, ref))
    got = meta_inputs(ns)
    want = [(tuple(i["shape"]), DTYPES[i["dtype"]][0]) for i in cuda["inputs"]]
    check([(tuple(t.shape), t.dtype) for t in got] == want,
          "%s: get_inputs() gives the task's inputs %s" % (name, want))
    check(ns["get_init_inputs"]() == [], "%s: get_init_inputs() is empty" % name)
    host_dir = os.path.join(root, "tasks/host", TWIN.get(name, name))
    host = json.load(open(os.path.join(host_dir, "task.json")))
    lib_path = os.path.join(tmp, name + ".so")
    subprocess.run([cc, "-O1", "-shared", "-fPIC", "-I", os.path.join(root, "common/include"),
                    "-o", lib_path, os.path.join(host_dir, host["oracle"]["source"]), "-lm"],
                   check=True)
    lib = ctypes.CDLL(lib_path)
    s = host["input_sets"][0]
    g = torch.Generator().manual_seed(s["seed"])
    classes = host["inputs"][0]["shape"][-1]
    ins = [draw(i, s, g, classes).contiguous() for i in host["inputs"]]
    outs = [torch.empty(tuple(o["shape"]), dtype=DTYPES[o["dtype"]][0]) for o in host["outputs"]]
    check(run_oracle(lib, ins, outs) == 0, "%s: the host oracle ran" % name)
    model = ns["Model"](*ns["get_init_inputs"]())
    with torch.no_grad():
        # f16 on the CPU: torch 1.13 has no f16 matmul there, so the module runs in f32 and
        # rounds once, as the oracle does
        half = [t.float() if t.dtype == torch.float16 else t for t in ins]
        y = model(*half)
    ys = list(y) if isinstance(y, (list, tuple)) else [y]
    atol = cuda.get("tolerance", {}).get("atol", 1e-4)
    rtol = cuda.get("tolerance", {}).get("rtol", 1e-4)
    for o, (a, b) in enumerate(zip(ys, outs)):
        a = a.to(b.dtype)
        ok = a.shape == b.shape and bool(torch.isclose(a.double(), b.double(), rtol=rtol,
                                                       atol=atol).all())
        err = float((a.double() - b.double()).abs().max()) if a.shape == b.shape else -1
        check(ok, "%s: output %d agrees with the oracle of tasks/host/%s (max abs err %.3g, "
              "atol %g, rtol %g)" % (name, o, TWIN.get(name, name), err, atol, rtol))


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    root, cc = argv[1], argv[2]
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory(prefix="kb-torch-refs-") as tmp:
        names = sorted(os.listdir(os.path.join(root, "tasks/cuda")))
        for name in names:
            check_task(root, name, cc, tmp)
    print("%d tasks, %d failures" % (len(names), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
