#!/usr/bin/env python3
"""CPU checks of the GPU catalogue (ctest, label runner; no GPU needed).

  check_catalogue.py manifest
      every tests/gpu/catalogue/*.cu has a well-formed header (catalogue.py's parse_header: the
      `catalogue: expect/source/task/tier` lines of CONTRACTS.md); at least MIN_KINDS
      candidates; at least four honest_* candidates, all expecting ok; every misbehaviour the
      issues asked for is there (REQUIRED).
  check_catalogue.py compile NVCC NAME...
      builds each named candidate's task oracle and the candidates with the candidate ABI's nvcc
      command (no GPU needed) and checks their imports against catalogue.py's REFUSED_IMPORTS: a
      candidate that imports a refused symbol must expect `rejected` with a reason that the
      import's reason (`imports "SYM"`) contains; the others import only what kb-runner allows.
Exit 0 when all checks pass; messages name the file and the problem.
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import catalogue  # noqa: E402  (the header parser and the import rule, written once)

ROOT = catalogue.ROOT
CAT = catalogue.CAT
MIN_KINDS = 30
# issue 4's misbehaviours and issue 12's kinds (the sys_* ones are the raw system calls)
REQUIRED = ["illegal_address", "infinite_loop", "nan_output", "writes_inputs", "first_call_only",
            "other_stream", "returns_early", "caches_by_pointer", "unwritten_output",
            "partial_output", "f16_accum", "oob_write",
            "memo_content", "memo_call_count", "sys_socket", "sys_execve", "sys_fork",
            "sys_open_after_load", "sys_write_outside", "sys_parent_environ", "per_thread_stream",
            "host_callback", "deferred_work", "l2_persist", "warmup_calls", "bf16_inputs",
            "returns_input", "sampled_output", "racy_reduction", "reads_reference"]
# CUDA imports a catalogue candidate may have besides the C runtime's (runner/allowlist.c)
ALLOWED_CUDA = {"cudaGetLastError", "cudaMallocAsync", "cudaFreeAsync", "cudaMemcpyAsync",
                "cudaGetSymbolAddress", "cudaGetDevice", "cudaDeviceGetAttribute",
                "__cudaRegisterFatBinary", "__cudaRegisterFatBinaryEnd",
                "__cudaUnregisterFatBinary", "__cudaRegisterFunction", "__cudaRegisterVar",
                "__cudaPushCallConfiguration", "__cudaPopCallConfiguration",
                "__cudaLaunchKernel", "__cudaGetKernel", "cudaLaunchKernel"}


def manifest():
    cat, errors = catalogue.load_catalogue()
    where = CAT
    if os.path.exists(os.path.join(CAT, "expected.txt")):
        errors.append("%s/expected.txt: the headers are the one source of truth: remove it" % where)
    if len(cat) + len(errors) < MIN_KINDS:
        errors.append("%s: %d candidates, want at least %d" % (where, len(cat), MIN_KINDS))
    for n in REQUIRED:
        if n not in cat:
            errors.append("%s: the misbehaviour \"%s\" is missing (no %s.cu)" % (where, n, n))
    honest = [n for n in cat if n.startswith("honest_")]
    if len(honest) < 4 or any(cat[n]["status"] != "ok" for n in honest):
        errors.append("%s: want at least 4 honest_* candidates, all expecting ok" % where)
    for n, h in cat.items():
        if not os.path.isfile(os.path.join(ROOT, h["task"], "task.json")):
            errors.append("%s/%s.cu: catalogue: task: no %s/task.json" % (where, n, h["task"]))
    return cat, errors


def compile_check(nvcc, names):
    cat, errors = manifest()
    build = tempfile.mkdtemp(prefix="kb-catcheck-")
    srcs = []
    for rel in sorted({cat[n]["task"] for n in names if n in cat}):
        (src, lib), _, _ = catalogue.task_requests(rel, build)
        srcs.append((None, src, lib))
    for n in names:
        if n not in cat:
            errors.append("%s: no candidate \"%s\"" % (CAT, n))
            continue
        srcs.append((n, os.path.join(CAT, n + ".cu"), os.path.join(build, n + ".so")))
    for n, src, lib in srcs:
        p = subprocess.run([nvcc, "-O3", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC",
                            "-cudart", "shared", "-I" + os.path.join(ROOT, "common", "include"),
                            "-o", lib, src], capture_output=True, text=True)
        if p.returncode != 0:
            errors.append("%s: nvcc failed: %s" % (src, (p.stdout + p.stderr).strip()[:400]))
            continue
        if n is None:
            continue
        h = cat[n]
        refused = catalogue.refused_import(lib)
        if refused:
            if h["status"] != "rejected" or h["reason"].lower() not in \
                    ('imports "%s"' % refused).lower():
                errors.append("%s: imports \"%s\", which the allow-list refuses, but expects %s "
                              "\"%s\"" % (src, refused, h["status"], h["reason"]))
            continue
        nm = subprocess.run(["nm", "-D", "--undefined-only", lib], capture_output=True, text=True)
        syms = {l.split()[-1].split("@")[0] for l in nm.stdout.splitlines() if l.strip()}
        extra = sorted(s for s in syms if (s.startswith("cuda") or s.startswith("__cuda")) and
                       s not in ALLOWED_CUDA)
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
