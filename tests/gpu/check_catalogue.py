#!/usr/bin/env python3
"""CPU checks of the GPU catalogue (ctest, label runner; no GPU needed).

  check_catalogue.py manifest
      expected.txt names every tests/gpu/catalogue/*.cu once and nothing else, with a known
      status; at least four honest candidates expect ok; every misbehaviour of issue 4 is there.
  check_catalogue.py compile NVCC NAME...
      builds tasks/cuda/rowsum_small's oracle and the named candidates with the candidate ABI's
      nvcc command (no GPU needed) and checks their imports: a candidate expected at the compile
      tier ("imports" in its reason) imports the named symbol, the others only the launch API.
Exit 0 when all checks pass; messages name the file and the problem.
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CAT = os.path.join(ROOT, "tests", "gpu", "catalogue")
STATUSES = {"ok", "compile_error", "wrong_output", "crash", "timeout", "rejected", "infra_error"}
REQUIRED = ["illegal_address", "infinite_loop", "nan_output", "writes_inputs", "first_call_only",
            "other_stream", "returns_early", "caches_by_pointer", "unwritten_output",
            "partial_output", "f16_accum", "oob_write"]


def manifest():
    exp, errors = {}, []
    path = os.path.join(CAT, "expected.txt")
    for no, line in enumerate(open(path), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) != 3:
            errors.append("%s:%d: want \"name status reason-substring\"" % (path, no))
            continue
        name, status, _ = parts
        if name in exp:
            errors.append("%s:%d: \"%s\" listed twice" % (path, no, name))
        if status not in STATUSES:
            errors.append("%s:%d: unknown status \"%s\"" % (path, no, status))
        exp[name] = (status, parts[2])
    files = {f[:-3] for f in os.listdir(CAT) if f.endswith(".cu")}
    for n in sorted(files - exp.keys()):
        errors.append("%s: %s.cu has no line" % (path, n))
    for n in sorted(exp.keys() - files):
        errors.append("%s: \"%s\" has no %s.cu" % (path, n, n))
    for n in REQUIRED:
        if n not in exp:
            errors.append("%s: the misbehaviour \"%s\" is missing" % (path, n))
    honest = [n for n, (st, _) in exp.items() if n.startswith("honest_")]
    if len(honest) < 4 or any(exp[n][0] != "ok" for n in honest):
        errors.append("%s: want at least 4 honest_* candidates, all expecting ok" % path)
    return exp, errors


def compile_check(nvcc, names):
    exp, errors = manifest()
    build = tempfile.mkdtemp(prefix="kb-catcheck-")
    srcs = [("oracle", os.path.join(ROOT, "tasks", "cuda", "rowsum_small", "oracle.cu"))]
    srcs += [(n, os.path.join(CAT, n + ".cu")) for n in names]
    for n, src in srcs:
        lib = os.path.join(build, n + ".so")
        p = subprocess.run([nvcc, "-O3", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC",
                            "-cudart", "shared", "-I" + os.path.join(ROOT, "common", "include"),
                            "-o", lib, src], capture_output=True, text=True)
        if p.returncode != 0:
            errors.append("%s: nvcc failed: %s" % (src, (p.stdout + p.stderr).strip()[:400]))
            continue
        nm = subprocess.run(["nm", "-D", "--undefined-only", lib], capture_output=True, text=True)
        syms = {l.split()[-1].split("@")[0] for l in nm.stdout.splitlines() if l.strip()}
        cuda = {s for s in syms if s.startswith("cuda") or s.startswith("cu")}
        status, reason = exp.get(n, ("ok", "-"))
        if "imports" in reason or n == "returns_early":
            if not any(s.startswith("cudaStreamCreate") for s in cuda):
                errors.append("%s: expected to import cudaStreamCreate*, imports %s" %
                              (src, sorted(cuda)))
        else:
            allowed = {"cudaGetLastError", "cudaMallocAsync", "cudaFreeAsync",
                       "__cudaRegisterFatBinary", "__cudaRegisterFatBinaryEnd",
                       "__cudaUnregisterFatBinary", "__cudaRegisterFunction", "__cudaRegisterVar",
                       "__cudaPushCallConfiguration", "__cudaPopCallConfiguration",
                       "__cudaLaunchKernel", "__cudaGetKernel", "cudaLaunchKernel"}
            extra = sorted(s for s in cuda if s not in allowed)
            if extra:
                errors.append("%s: imports %s, which kb-runner would refuse" % (src, extra))
    return errors


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "manifest":
        errors = manifest()[1]
    elif len(sys.argv) >= 4 and sys.argv[1] == "compile":
        errors = compile_check(sys.argv[2], sys.argv[3:])
    else:
        print(__doc__)
        return 2
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
