#!/usr/bin/python3
"""Tests of kb-import-kernelbench on the task files in tests/tasks/kernelbench/ (written for
these tests in KernelBench's format, not copied from it).

usage: test_import.py PATH_TO_kb-import-kernelbench [PATH_TO_kb-submit [PATH_TO_WORKER]]

One importer process imports every file (torch loads once) and writes a campaign over them;
then each bundle's task.json is compared field by field with what it must be (a 41-input deep
MLP, scalar inputs as 0-d tensors, shapes from a real CPU run where an operator has no meta
kernel), its kernelbench.json ("requires", "scalars", draws) and files (reference.py, the
identity and torch.compile seeds) are checked, every task.json and the campaign pass the JSON
Schema and (given kb-submit) `kb-submit validate` reads the campaign and every bundle,
kb-task-check (beside the importer) reads every bundle and flags a seed with no ModelNew, the
broken files give their messages (a missing module named), and the peak memory of the importer
shows the 6 GiB softmax input was never allocated. Given the PyTorch worker, it is imported in
this process and prepares the scalar task on the CPU: the module gets Python numbers. A few
more runs check the options (--backend host, --level from the folder, --atol/--rtol, --json,
--device auto over --cpu-limit, --gpu-seconds, --version) and usage errors.
Prints "N passed, M failed" and exits 1 when any check failed.
"""
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from worker_module import load_worker

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = os.path.join(HERE, "kernelbench")
VALIDATE = os.path.join(HERE, "..", "schema", "validate.py")
PY = os.environ.get("KB_TEST_PYTHON", "/usr/bin/python3")  # the interpreter running the tool

F32_TOL = {"atol": 1e-4, "rtol": 1e-4}
NORMAL = {"distribution": "normal", "low": 0, "high": 1}
UNIFORM = {"distribution": "uniform", "low": 0, "high": 1}


def t(name, dtype, shape):
    return {"name": name, "dtype": dtype, "shape": shape}


# id: (file stem, inputs, outputs, tolerance, set distribution, init_inputs, input draws)
EXPECTED = {
    "1_relu": ([t("x", "f32", [16, 16384])], [t("out", "f32", [16, 16384])], F32_TOL, NORMAL,
               [], ["randn"]),
    "2_sum_over_dim": ([t("x", "f32", [16, 256, 256])], [t("out", "f32", [16, 1, 256])],
                       F32_TOL, UNIFORM, [1], ["rand"]),
    "3_matmul_large": ([t("A", "f32", [8192, 8192]), t("B", "f32", [8192, 8192])],
                       [t("out", "f32", [8192, 8192])], F32_TOL, NORMAL, [],
                       ["randn", "randn"]),
    "4_softmax_huge": ([t("x", "f32", [4096, 393216])], [t("out", "f32", [4096, 393216])],
                       F32_TOL, NORMAL, [], ["randn"]),
    # the module's parameters follow forward()'s inputs, in named_parameters() order
    "5_conv2d": ([t("x", "f32", [16, 3, 256, 256]), t("conv_weight", "f32", [64, 3, 3, 3]),
                  t("conv_bias", "f32", [64])], [t("out", "f32", [16, 64, 128, 128])],
                 F32_TOL, NORMAL, [3, 64, 3, 2, 1], ["randn", "parameter", "parameter"]),
    "6_conv_relu_bias_add": ([t("x", "f32", [128, 3, 32, 32]), t("bias", "f32", [16, 1, 1]),
                              t("conv_weight", "f32", [16, 3, 3, 3]),
                              t("conv_bias", "f32", [16])],
                             [t("out", "f32", [128, 16, 30, 30])], F32_TOL, NORMAL,
                             [3, 16, 3, [16, 1, 1]], ["randn"] + ["parameter"] * 3),
    "7_small_mlp": ([t("x", "f32", [1, 1000]), t("network_0_weight", "f32", [400, 1000]),
                     t("network_0_bias", "f32", [400]),
                     t("network_2_weight", "f32", [800, 400]),
                     t("network_2_bias", "f32", [800]),
                     t("network_4_weight", "f32", [500, 800]),
                     t("network_4_bias", "f32", [500])], [t("out", "f32", [1, 500])], F32_TOL,
                    NORMAL, [1000, [400, 800], 500], ["randn"] + ["parameter"] * 6),
    "8_cross_entropy": ([t("predictions", "f32", [4096, 10]), t("targets", "i64", [4096])],
                        [t("out", "f32", [])], F32_TOL, NORMAL, [], ["randn", "randint"]),
    "9_half_matmul": ([t("a", "f16", [2048, 1024]), t("b", "f16", [1024, 512])],
                      [t("out", "f16", [2048, 512])], {"atol": 1e-2, "rtol": 1e-2}, NORMAL, [],
                      ["randn", "randn"]),
    "10_max_with_indices": ([t("x", "f32", [64, 128, 32])],
                            [t("out0", "f32", [64, 128]), t("out1", "i64", [64, 128])],
                            F32_TOL, NORMAL, [2], ["randn"]),
    "11_scale_by_max": ([t("x", "f32", [64, 256])], [t("out", "f32", [64, 256])], F32_TOL,
                        NORMAL, [], ["randn"]),
    "12_small_linear": ([t("x", "f32", [8, 64]), t("linear_weight", "f32", [32, 64]),
                         t("linear_bias", "f32", [32])], [t("out", "f32", [8, 32])], F32_TOL,
                        NORMAL, [64, 32], ["randn", "parameter", "parameter"]),
    "13_deep_mlp": ([t("x", "f32", [4, 16])] +
                    [t("layers_%d_%s" % (i, w), "f32", [16, 16] if w == "weight" else [16])
                     for i in range(20) for w in ("weight", "bias")],
                    [t("out", "f32", [4, 16])], F32_TOL, NORMAL, [16, 20],
                    ["randn"] + ["parameter"] * 40),
    # Python scalars: 0-d f32, i64 and bool inputs
    "14_scalar_inputs": ([t("x", "f32", [32, 8]), t("scale", "f32", []), t("shift", "i64", []),
                          t("flip", "bool", [])], [t("out", "f32", [32, 8])], F32_TOL, NORMAL,
                         [], ["randn", "scalar", "scalar", "scalar"]),
    "15_max_pool3d": ([t("x", "f32", [2, 4, 16, 16, 32])], [t("out", "f32", [2, 4, 8, 8, 16])],
                      F32_TOL, NORMAL, [2], ["randn"]),
    "16_init_item": ([t("x", "f32", [8, 4]), t("scales", "f32", [4])],
                     [t("out", "f32", [8, 4])], F32_TOL, NORMAL, [4], ["randn", "parameter"]),
    # constructor arguments that are not JSON values: recorded, the class and inf by repr
    "17_init_objects": ([t("x", "f32", [4, 16]), t("fc_weight", "f32", [16, 16]),
                         t("fc_bias", "f32", [16])], [t("out", "f32", [8, 8])], F32_TOL, NORMAL,
                        [16, {"repr": "<class 'torch.nn.modules.activation.GELU'>"},
                         {"scale": 0.5, "shape": [8, 8]}, "torch.float32", {"repr": "inf"}],
                        ["randn", "parameter", "parameter"]),
    # integer inputs only, of different bounds: standard sets (get_inputs() as it is)
    "18_index_tables": ([t("w", "i64", [32]), t("k", "i64", [32]),
                         t("words_weight", "f32", [1000, 16]), t("kinds_weight", "f32", [10, 16])],
                        [t("out", "f32", [32, 16])], F32_TOL, NORMAL, [],
                        ["randint", "randint", "parameter", "parameter"]),
}
# the meta device cannot run forward() (float() of a tensor; max_pool3d_with_indices on torch
# 1.13) or the constructor (.item()): shapes from a real CPU run
SHAPES_FROM_CPU = {"11_scale_by_max", "15_max_pool3d", "16_init_item"}
# max_pool3d_with_indices has a meta kernel in newer torch: meta or cpu are both right there
SHAPES_FROM_EITHER = {"15_max_pool3d"}
REQUIRES = {"14_scalar_inputs": ["numpy"]}
SCALARS = {"14_scalar_inputs": [{"name": "scale", "factory": "scalar", "python": "float",
                                 "value": 2.5},
                                {"name": "shift", "factory": "scalar", "python": "int",
                                 "value": 3},
                                {"name": "flip", "factory": "scalar", "python": "bool",
                                 "value": True}]}

BROKEN = {
    "bad_no_model.py": "no class Model (an nn.Module subclass)",
    "bad_get_inputs_raises.py": "get_inputs() raised ValueError: no inputs today (line 12)",
    "bad_non_tensor_output.py": "forward() returned int, not a tensor (or a tuple of tensors)",
    "bad_syntax.py": "5:16: syntax error: invalid syntax",
    "bad_non_tensor_input.py": "get_inputs() item 1 is str, not a tensor or a Python number "
                               "(float, int, bool): the kernel ABI passes tensors only",
    "bad_model_not_module.py": "Model is not a subclass of torch.nn.Module",
    "bad_edits_input.py": "forward() changes its input \"b\" in place: the kernel ABI's inputs "
                          "are read-only, so a candidate doing the same is rejected; make the "
                          "reference work on a copy (x = x.clone())",
    "bad_edits_input_data.py": "forward() changes its input \"x\" in place: the kernel ABI's "
                               "inputs are read-only, so a candidate doing the same is rejected; "
                               "make the reference work on a copy (x = x.clone())",
    # (start, end): the middle is the two values Python's random.randint drew
    "bad_random_scalar.py": ("get_inputs() item 1 (k) is a Python int that changes from one "
                             "draw to the next (", "): a scalar input must have the same value "
                             "in every input set; make it a constant or a 0-d tensor "
                             "(torch.randint(1, 9, ()))"),
    "bad_edits_parameter.py": "forward() changes the module's parameter \"w\" in place: a "
                              "parameter is an input of the task, and the kernel ABI's inputs "
                              "are read-only, so a candidate doing the same is rejected (and "
                              "each call gives other outputs); keep the changed value in a new "
                              "tensor",
    "bad_random_shape.py": ("get_inputs() item 0 (x) changes from one draw to the next (f32[",
                            "): a task has one shape and dtype per input; draw the sizes once, "
                            "at module level"),
    "bad_sparse_output.py": "forward() output 0 is a sparse_coo tensor: kernelbrain tensors "
                            "are dense (strided); make it one with .to_dense()",
    "bad_multiline_error.py": "Model(*get_init_inputs()) raised ValueError: no such "
                              "configuration (line 10)",
    "bad_missing_module.py": "needs the Python module kb_made_up_module_for_tests, not "
                             "installed here (line 3)",
    "bad_exits.py": "executing the file called sys.exit(3) (line 7)",
    "bad_tensor_subclass.py": "the importer failed on this file (a bug of kb-import-kernelbench; "
                              "the traceback is above): RuntimeError: no layout today",
    "bad_patches_torch.py": "replaces torch.nn.functional.gelu: a task file must leave torch as "
                            "it found it (the PyTorch worker runs several tasks in one process, "
                            "and another task's code would get it); call a function of the "
                            "file's own instead",
    "bad_not_utf8.py": "cannot read it as utf-8: byte 0xe9 at offset 43 is not valid there; save "
                       "the file as UTF-8, or declare its encoding on its first line (# -*- "
                       "coding: latin-1 -*-)",
    "bad_imports_sibling.py": "imports kb_sibling_pkg, which is kb_sibling_pkg next to it, not "
                              "an installed module (line 6): a task is this one file (the "
                              "PyTorch worker runs it alone); copy what it needs from "
                              "kb_sibling_pkg into it",
    "bad_value_shape.py": ("forward() output 0 has a shape that depends on the input values ([",
                           "): a task has one shape per output; return a result of a fixed "
                           "size (a mask, or values padded to a fixed length)"),
    "bad_sets_default_dtype.py": "changes torch's process-wide setting "
                                 "torch.get_default_dtype() (torch.float32, then torch.float64): "
                                 "the PyTorch worker runs several tasks and candidates in one "
                                 "process, so a task file must leave it as it found it (pass "
                                 "dtype= to the tensors and modules it makes; torch.no_grad() in "
                                 "a with block)",
    # (start, end): the loop stops at its line 14 or 15, whichever runs when the signal comes
    "bad_hangs.py": ("did not finish in 15 s (--file-timeout): stopped at line 1",
                     ", in get_inputs()"),
    "bad_sleeps_at_top.py": "did not finish in 15 s (--file-timeout): stopped at line 9, in the "
                            "file's top level",
    # (start, end): the middle is torch's own message, which differs between versions (torch
    # 1.13 names the operator: "operator aten::_local_scalar_dense has no meta kernel ...")
    # (--device cpu in that run, so a GPU machine gives the same message)
    "bad_meta_too_large.py": ("cannot infer the output shapes: ", "; the inputs and parameters "
                              "take 1024 MiB, over --cpu-limit 512 MiB for a real CPU run: "
                              "import it on a GPU node (--device cuda or auto)"),
}

passed = 0
failed = 0


def check(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL: %s%s" % (what, ("\n  " + detail) if detail else ""))


def run(tool, *args):
    r = subprocess.run([PY, tool] + list(args), capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


# tasks whose set takes over 8 GiB of device memory (inputs, references, two output buffers):
# two input sets, not three
TWO_SETS = {"4_softmax_huge": (1, 2)}


def expected_task(tid, backend="cuda", name=None, category="kernelbench", level=None):
    ins, outs, tol, dist, _, _ = EXPECTED[tid]
    stem = tid
    return {
        "schema": "kernelbrain.task/1",
        "id": tid if level is None else "l%d_%s" % (level, tid),
        "name": name or "KernelBench: %s" % stem.replace("_", " "),
        "category": category,
        "backend": backend,
        "oracle": {"kind": "pytorch", "source": "reference.py"},
        "inputs": ins,
        "outputs": outs,
        "tolerance": tol,
        "input_sets": [dict({"seed": s}, **dist) for s in TWO_SETS.get(tid, (1, 2, 3))],
        "seeds": [{"name": "identity", "source": "seeds/identity.py"},
                  {"name": "compile", "source": "seeds/compile.py"}],
        "baseline": "identity",
    }


SEED_ENDS = {"identity": "\nModelNew = Model\n",
             "compile": "        return self.kb_compiled(*args)\n"}


def check_bundle(out, tid):
    """task.json field by field, kernelbench.json, reference.py and the two seeds of `tid`."""
    _, _, _, _, init, factories = EXPECTED[tid]
    d = os.path.join(out, tid)
    try:
        task = json.load(open(os.path.join(d, "task.json")))
        side = json.load(open(os.path.join(d, "kernelbench.json")))
    except (OSError, ValueError) as e:
        check(False, "%s: bundle readable" % tid, str(e))
        return
    want = expected_task(tid)
    for key in sorted(set(want) | set(task)):
        check(task.get(key) == want.get(key), "%s: task.json \"%s\"" % (tid, key),
              "got  %s\nwant %s" % (json.dumps(task.get(key)), json.dumps(want.get(key))))
    check(list(task) == list(want), "%s: field order" % tid, str(list(task)))
    check(side["init_inputs"] == init, "%s: init_inputs" % tid, str(side["init_inputs"]))
    check([i["factory"] for i in side["inputs"]] == factories, "%s: factories" % tid,
          str(side["inputs"]))
    where = ("meta", "cpu") if tid in SHAPES_FROM_EITHER else \
        ("cpu",) if tid in SHAPES_FROM_CPU else ("meta",)
    check(side["shapes_from"] in where and side["level"] is None,
          "%s: shapes_from and level" % tid, str(side))
    check(side["requires"] == REQUIRES.get(tid, []), "%s: requires" % tid, str(side))
    scalars = SCALARS.get(tid, [])
    check([x for x in side["inputs"] if x["factory"] == "scalar"] == scalars and
          side["scalars"] == [x["name"] for x in scalars], "%s: scalars" % tid, str(side))
    src = open(os.path.join(FILES, tid + ".py")).read()
    check(open(os.path.join(d, "reference.py")).read() == src,
          "%s: reference.py is the task file" % tid)
    for name, end in SEED_ENDS.items():
        seed = open(os.path.join(d, "seeds", name + ".py")).read()
        check(seed.startswith(src.rstrip("\n") + "\n") and seed.endswith(end),
              "%s: seeds/%s.py is the task file and its ModelNew" % (tid, name), seed[-300:])
    return side


def check_messages(stderr):
    for fname, msg in BROKEN.items():
        head = "kb-import-kernelbench: %s: " % os.path.join(FILES, fname)
        if isinstance(msg, tuple):
            found = [x for x in stderr.splitlines() if x.startswith(head + msg[0]) and
                     x.endswith(msg[1])]
            check(len(found) == 1, "message for %s" % fname,
                  "want: %s...%s\ngot:\n%s" % (head + msg[0], msg[1], stderr))
            if fname == "bad_meta_too_large.py" and found and " 1.13" in found[0]:
                # torch 1.13 says which operator
                check("operator aten::_local_scalar_dense has no meta kernel in torch 1.13" in
                      found[0], "the operator is named", found[0])
            continue
        line = head + msg
        check(line in stderr.splitlines(), "message for %s" % fname,
              "want: %s\ngot:\n%s" % (line, stderr))


def check_campaign(out, camp, kb_submit):
    """The --campaign file: its fields, the schema, and kb-submit validate (every bundle
    through the C loader, the .py seeds included)."""
    try:
        c = json.load(open(camp))
    except (OSError, ValueError) as e:
        check(False, "campaign readable", str(e))
        return
    want = {"schema": "kernelbrain.campaign/1", "id": "imported",
            "name": "KernelBench: %d imported tasks" % len(EXPECTED), "backend": "cuda",
            "tasks": ["bundles/" + tid for tid in sorted(EXPECTED)],
            "budget": {"gpu_seconds": max(60 * len(EXPECTED), 600)},
            "generators": {"seed": True}}
    check(c == want, "campaign file", json.dumps(c))
    r = subprocess.run([PY, VALIDATE, "campaign", camp], capture_output=True, text=True)
    check(r.returncode == 0, "the campaign passes the schema", r.stderr)
    if kb_submit is None:
        return
    r = subprocess.run([kb_submit, "validate", camp], capture_output=True, text=True)
    n = len(EXPECTED)
    check(r.returncode == 0 and "%d tasks, %d seed candidates" % (n, 2 * n) in r.stdout,
          "kb-submit validate accepts the campaign and the bundles", r.stdout + r.stderr)


def check_task_check(tool, bundles_dir):
    """kb-task-check (beside the importer in build/bin) reads every bundle: the PyTorch-oracle
    check finds reference.py's Model and each seed's ModelNew; a seed without one is flagged."""
    checker = os.path.join(os.path.dirname(tool), "kb-task-check")
    dirs = [os.path.join(bundles_dir, tid) for tid in sorted(EXPECTED)]
    r = subprocess.run([PY, checker] + dirs, capture_output=True, text=True)
    oks = [x for x in r.stdout.splitlines() if x.endswith(": ok (PyTorch oracle: reference.py "
                                                         "and the seeds' ModelNew present; no "
                                                         "CPU model, so not checked for "
                                                         "degeneracy)")]
    check(r.returncode == 0 and len(oks) == len(EXPECTED), "kb-task-check on every bundle",
          r.stdout + r.stderr)
    seed = os.path.join(bundles_dir, "1_relu", "seeds", "compile.py")
    src = open(seed).read().replace("class ModelNew(Model):", "class Other(Model):")
    with open(seed, "w") as f:
        f.write(src)
    r = subprocess.run([PY, checker, os.path.join(bundles_dir, "1_relu")], capture_output=True,
                       text=True)
    check(r.returncode == 1 and r.stdout == '1_relu: seed "compile" (seeds/compile.py) defines '
          'no ModelNew\n', "kb-task-check flags a seed without ModelNew", r.stdout + r.stderr)


def check_worker(out, worker):
    """The PyTorch worker, imported here, prepares the scalar task on the CPU: the candidate's
    inputs hold 0-d tensors, the module got the Python values (it raises on tensors)."""
    w = load_worker(worker, with_torch=False)
    w.open_device("host", 0)
    d = os.path.join(out, "bundles", "14_scalar_inputs")
    t = json.load(open(os.path.join(d, "task.json")))
    try:
        task = w.prepare_task({"op": "prepare", "key": "k", "inputs": t["inputs"],
                               "oracle": os.path.join(d, "reference.py"),
                               "outputs": t["outputs"], "sets": t["input_sets"],
                               "atol": t["tolerance"]["atol"], "rtol": t["tolerance"]["rtol"]})
    except w.Failure as e:
        check(False, "the worker prepares the scalar task", str(e))
        return
    ins = task.set_inputs[0]
    check([(str(x.dtype), list(x.shape)) for x in ins[1:]] ==
          [("torch.float32", []), ("torch.int64", []), ("torch.bool", [])] and
          [x.item() for x in ins[1:]] == [2.5, 3, True], "the worker's 0-d scalar inputs",
          str(ins[1:]))
    args = w.forward_args(task, ins)
    check([type(a) for a in args[1:]] == [float, int, bool], "forward() gets Python numbers",
          str(args))
    # the identity seed's ModelNew is Model; compile's a subclass with Model's constructor
    ns = {}
    exec(open(os.path.join(d, "seeds", "identity.py")).read(), ns)
    check(ns["ModelNew"] is ns["Model"], "identity seed: ModelNew is Model")
    ns = {}
    exec(open(os.path.join(d, "seeds", "compile.py")).read(), ns)
    check(issubclass(ns["ModelNew"], ns["Model"]) and ns["ModelNew"] is not ns["Model"],
          "compile seed: ModelNew subclasses Model")


def check_options(tool, out):
    """--backend host, --level from a level2/ folder, --atol/--rtol, --json, --device auto
    over --cpu-limit, --gpu-seconds; the same id twice; --version and usage errors."""
    lvl = os.path.join(out, "src", "level2")
    os.makedirs(lvl)
    shutil.copy(os.path.join(FILES, "6_conv_relu_bias_add.py"), lvl)
    shutil.copy(os.path.join(FILES, "9_half_matmul.py"), lvl)
    out2 = os.path.join(out, "host")
    rc, stdout, stderr = run(tool, "--out", out2, "--backend", "host", "--atol", "0.01",
                             "--rtol", "0.02", "--json", "--campaign",
                             os.path.join(out, "c2.json"), "--gpu-seconds", "7.5",
                             os.path.join(lvl, "6_conv_relu_bias_add.py"),
                             os.path.join(lvl, "9_half_matmul.py"))
    check(rc == 0, "host import exits 0", stderr)
    lines = [json.loads(x) for x in stdout.splitlines()]
    check([x["id"] for x in lines] == ["l2_6_conv_relu_bias_add", "l2_9_half_matmul"] and
          all(x["ok"] for x in lines), "--json lines", stdout)
    task = json.load(open(os.path.join(out2, "l2_6_conv_relu_bias_add", "task.json")))
    want = expected_task("6_conv_relu_bias_add", backend="host",
                         name="KernelBench level 2: 6 conv relu bias add",
                         category="kernelbench-level2", level=2)
    want["tolerance"] = {"atol": 0.01, "rtol": 0.02}
    check(task == want, "host/level-2 task.json", json.dumps(task))
    side = json.load(open(os.path.join(out2, "l2_9_half_matmul", "kernelbench.json")))
    check(side["level"] == 2, "level recorded", str(side))
    c2 = json.load(open(os.path.join(out, "c2.json")))
    check(c2["id"] == "c2" and c2["backend"] == "host" and c2["budget"]["gpu_seconds"] == 7.5
          and c2["tasks"] == ["host/l2_6_conv_relu_bias_add", "host/l2_9_half_matmul"],
          "--campaign with --backend host and --gpu-seconds", json.dumps(c2))

    # a file that set torch's default dtype: the file after it still imported as f32
    settled = os.path.join(out, "settled")
    rc, stdout, stderr = run(tool, "--out", settled,
                             os.path.join(FILES, "bad_sets_default_dtype.py"),
                             os.path.join(FILES, "1_relu.py"))
    task = json.load(open(os.path.join(settled, "1_relu", "task.json")))
    check(rc == 1 and [x["dtype"] for x in task["inputs"] + task["outputs"]] == ["f32", "f32"],
          "the default dtype set back after the file that changed it", stdout + stderr)

    # a file that moves the working folder and makes warnings errors: set back after it, so
    # relative paths and --out still hold and the next file's warning stays one
    moved = os.path.join(out, "moved", "here")
    os.makedirs(moved)
    extra = os.path.join(HERE, "kernelbench_extra")
    for f in ("33_moves_cwd.py", "34_implicit_dim.py"):
        shutil.copy(os.path.join(extra, f), moved)
    shutil.copy(os.path.join(FILES, "1_relu.py"), moved)
    r = subprocess.run([PY, tool, "--out", "bundles", "33_moves_cwd.py", "1_relu.py",
                        "34_implicit_dim.py"], capture_output=True, text=True, cwd=moved)
    check(r.returncode == 0 and sorted(os.listdir(os.path.join(moved, "bundles"))) ==
          ["1_relu", "33_moves_cwd", "34_implicit_dim"] and
          not os.path.exists(os.path.join(out, "moved", "bundles")),
          "os.chdir and warnings.simplefilter of a file set back after it", r.stdout + r.stderr)

    # the same id twice in one run; --device auto over --cpu-limit: CUDA where there is one
    relu = os.path.join(FILES, "1_relu.py")
    dup = os.path.join(out, "dup")
    rc, stdout, stderr = run(tool, "--out", dup, "--cpu-limit", "0", relu, relu,
                             os.path.join(FILES, "15_max_pool3d.py"))
    check(rc == 1 and 'task id "1_relu" is taken by' in stderr, "duplicate id", stderr)
    if "15_max_pool3d -> " in stdout:  # a meta kernel (torch 2), or a run on CUDA
        side = json.load(open(os.path.join(dup, "15_max_pool3d", "kernelbench.json")))
        check(side["shapes_from"] in ("meta", "cuda"), "--device auto over --cpu-limit",
              str(side))
    else:  # torch 1.13 on a machine without a GPU
        check("15_max_pool3d.py: cannot infer the output shapes: operator "
              "aten::max_pool3d_with_indices has no meta kernel in torch 1.13" in stderr and
              stderr.count("; the inputs and parameters take 256 KiB, over --cpu-limit 0 MiB for "
                           "a real CPU run, and there is no CUDA device here: import it on a GPU "
                           "node (--device cuda or auto)\n") == 1,
              "--device auto without a GPU", stderr)

    rc, stdout, _ = run(tool, "--help")
    check(rc == 0 and "usage: kb-import-kernelbench --out DIR" in stdout and
          "default 60 per imported task" in stdout, "--help")
    rc, stdout, _ = run(tool, "--version")
    check(rc == 0 and re.fullmatch(r"kb-import-kernelbench \S+( \(commit \S+\))?\n", stdout),
          "--version", stdout)
    rc, _, stderr = run(tool, relu)
    check(rc == 2 and stderr == "kb-import-kernelbench: --out DIR is required\nTry "
          "'kb-import-kernelbench --help' for more information.\n", "missing --out", stderr)
    rc, _, stderr = run(tool, "--out", out)
    check(rc == 2 and "no task FILE given" in stderr, "no files", stderr)
    rc, _, stderr = run(tool, "--out", out, "--atol", "-1", relu)
    check(rc == 2 and "--atol must be a number >= 0" in stderr, "bad --atol", stderr)
    rc, _, stderr = run(tool, "--out", out, "--device", "tpu", relu)
    check(rc == 2 and "--device" in stderr, "bad --device", stderr)
    rc, _, stderr = run(tool, "--out", out, "--gpu-seconds", "0", relu)
    check(rc == 2 and "--gpu-seconds must be a number in (0, 1e9]" in stderr,
          "bad --gpu-seconds", stderr)
    rc, _, stderr = run(tool, "--out", os.path.join(relu, "x"), relu)
    check(rc == 2 and "cannot create" in stderr, "unwritable --out", stderr)


FATAL = os.path.join(HERE, "kernelbench_fatal")


def check_fatal(tool, out):
    """Task files that end or stall the process importing them past Python's reach
    (kernelbench_fatal/): os._exit(0) at the top level, a SIGSEGV in native code in get_inputs(),
    SIGALRM ignored and a loop (the signal --file-timeout stops a file with), a write to file
    descriptor 1 itself; a plain file after each. Each fatal file fails in one line naming it and
    the cause, the plain files are imported, the summary comes, the exit status is 1, and --json's
    stdout holds JSON Lines only. Once the importer stopped silently at os._exit (exit status 0,
    no summary, the files after it lost) and waited forever on the loop. A FIFO and /dev/zero
    given as files: "not a regular file" at once (the FIFO's open blocked, /dev/zero was read
    until the timeout killed it, gigabytes of memory meanwhile)."""
    names = sorted(f for f in os.listdir(FATAL) if f.endswith(".py"))
    fatal = os.path.join(out, "fatal")
    # not regular files: a FIFO (its open blocked), a device (/dev/zero read on and on)
    odd = os.path.join(out, "odd")
    os.makedirs(odd)
    os.mkfifo(os.path.join(odd, "7_fifo.py"))
    os.symlink("/dev/zero", os.path.join(odd, "8_zero.py"))
    start = time.monotonic()
    try:
        r = subprocess.run([PY, tool, "--json", "--out", fatal, "--file-timeout", "2"] +
                           [os.path.join(FATAL, n) for n in names] +
                           [os.path.join(odd, "7_fifo.py"), os.path.join(odd, "8_zero.py")],
                           capture_output=True, text=True, timeout=60)
        rc, stdout, stderr = r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired as e:
        rc, stdout, stderr = None, e.stdout or "", "timed out after 60 s"
    took = time.monotonic() - start
    try:
        lines = [json.loads(x) for x in stdout.splitlines()]
    except ValueError:
        lines = []
    check(rc == 1 and [os.path.basename(x.get("file", "")) for x in lines] ==
          names + ["7_fifo.py", "8_zero.py"],
          "fatal files: exit status 1, one JSON line per file on stdout", "rc %s, %.1f s\n%s\n%s"
          % (rc, took, stdout, stderr))
    ok = [os.path.basename(x["file"]) for x in lines if x.get("ok")]
    check(ok == ["2_good.py", "4_good.py", "6_writes_fd1.py"], "the plain files imported", ok)
    check("noise from the task file on fd 1" in stderr, "fd 1 of the file's code goes to stderr",
          stderr)
    check("imported 3 of 8 files; 5 failed" in stderr, "fatal files: the summary", stderr)
    for n, kind in (("7_fifo.py", "a FIFO"), ("8_zero.py", "a device")):
        line = "kb-import-kernelbench: %s: cannot read: not a regular file (%s)" % (
            os.path.join(odd, n), kind)
        check(line in stderr.splitlines(), "message for %s" % n, "want: %s\ngot:\n%s"
              % (line, stderr))
    want = {"1_os_exit.py": "ended the process importing it (exit status 0) before it was "
                            "imported: a task file must return from its code (os._exit(), a "
                            "signal or a crash in native code ends the PyTorch worker the same "
                            "way)",
            "3_segfault.py": "ended the process importing it (killed by signal SIGSEGV) before "
                             "it was imported: a task file must return from its code (os._exit("
                             "), a signal or a crash in native code ends the PyTorch worker the "
                             "same way)",
            "5_ignores_alarm.py": "did not finish in 2 s (--file-timeout) and did not stop at "
                                  "SIGALRM (ignored or blocked, or native code that does not "
                                  "return): killed after 7 s"}
    for n, msg in want.items():
        line = "kb-import-kernelbench: %s: %s" % (os.path.join(FATAL, n), msg)
        check(line in stderr.splitlines(), "message for %s" % n, "want: %s\ngot:\n%s"
              % (line, stderr))
    check(took < 30, "fatal files: done in %.1f s" % took)


def main():
    tool = os.path.abspath(sys.argv[1])
    kb_submit = sys.argv[2] if len(sys.argv) > 2 else None
    out = tempfile.mkdtemp(prefix="kb-import-test.")
    try:
        files = sorted(os.path.join(FILES, f) for f in os.listdir(FILES) if f.endswith(".py"))
        bundles_dir = os.path.join(out, "bundles")
        camp = os.path.join(out, "imported.json")
        rc, stdout, stderr = run(tool, "--out", bundles_dir, "--campaign", camp, "--device",
                                 "cpu", "--file-timeout", "15", *files)
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        check(rc == 1, "exit status 1 when some files fail", "got %d\n%s" % (rc, stderr))
        check("imported %d of %d files; %d failed" % (len(EXPECTED), len(files), len(BROKEN))
              in stdout, "summary line", stdout)
        check("campaign %s: %d tasks, %d GPU-seconds" % (camp, len(EXPECTED),
                                                         max(60 * len(EXPECTED), 600)) in stdout,
              "campaign line", stdout)
        # the 6 GiB input of 4_softmax_huge (and 2 x 256 MiB of 3_matmul_large) never allocated
        check(peak_kib < 1024 * 1024, "importer peak memory under 1 GiB",
              "%d MiB" % (peak_kib // 1024))
        check_messages(stderr)
        bundles = sorted(os.listdir(bundles_dir))
        check(bundles == sorted(EXPECTED), "one bundle per good file", str(bundles))
        for tid in EXPECTED:
            check_bundle(bundles_dir, tid)
        ce = json.load(open(os.path.join(bundles_dir, "8_cross_entropy", "kernelbench.json")))
        check(ce["inputs"][1] == {"name": "targets", "factory": "randint",
                                  "distribution": "integers", "low": 0, "high": 10},
              "randint bounds recorded", str(ce["inputs"][1]))
        tasks = [os.path.join(bundles_dir, b, "task.json") for b in bundles]
        r = subprocess.run([PY, VALIDATE, "task"] + tasks, capture_output=True, text=True)
        check(r.returncode == 0, "every task.json passes the schema", r.stderr)
        check_campaign(out, camp, kb_submit)
        check_task_check(tool, bundles_dir)
        if len(sys.argv) > 3:
            check_worker(out, sys.argv[3])
        check_options(tool, out)
        check_fatal(tool, out)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
