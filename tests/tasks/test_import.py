#!/usr/bin/python3
"""Tests of tools/kb-import-kernelbench on the task files in tests/tasks/kernelbench/ (written for
these tests in KernelBench's format, not copied from it).

usage: test_import.py PATH_TO_kb-import-kernelbench [PATH_TO_kb-submit]

One importer process imports every file (torch loads once); then each bundle's task.json is
compared field by field with what it must be, its kernelbench.json and files are checked, every
task.json passes the JSON Schema and (given kb-submit) `kb-submit validate` on a campaign of
all the bundles, the broken files give their messages, and the peak memory of
the importer shows the 6 GiB softmax input was never allocated. A few more runs check the
options (--backend host, --level from the folder, --atol/--rtol, --json) and usage errors.
Prints "N passed, M failed" and exits 1 when any check failed.
"""
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile

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
}
# forward() cannot run on the meta device (float() of a tensor): shapes from a real CPU run
SHAPES_FROM_CPU = {"11_scale_by_max"}

BROKEN = {
    "bad_no_model.py": "no class Model (an nn.Module subclass)",
    "bad_get_inputs_raises.py": "get_inputs() raised ValueError: no inputs today (line 12)",
    "bad_non_tensor_output.py": "forward() returned int, not a tensor (or a tuple of tensors)",
    "bad_syntax.py": "5:16: syntax error: invalid syntax",
    "bad_non_tensor_input.py": "get_inputs() item 1 is float, not a tensor: the kernel ABI "
                               "passes tensors only",
    "bad_model_not_module.py": "Model is not a subclass of torch.nn.Module",
    # (start, end): the middle is torch's own message, which differs between versions
    "bad_meta_too_large.py": ("cannot infer the output shapes: forward() on the meta device "
                              "raised ", "; the inputs take 1024 MiB, over --cpu-limit 512 MiB "
                              "for a real CPU run"),
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
        "input_sets": [dict({"seed": s}, **dist) for s in (1, 2, 3)],
        "seeds": [{"name": "stub", "source": "seeds/stub.cu" if backend == "cuda"
                   else "seeds/stub.c"}],
    }


def main():
    tool = os.path.abspath(sys.argv[1])
    out = tempfile.mkdtemp(prefix="kb-import-test.")
    try:
        files = sorted(os.path.join(FILES, f) for f in os.listdir(FILES) if f.endswith(".py"))
        rc, stdout, stderr = run(tool, "--out", out, *files)
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        check(rc == 1, "exit status 1 when some files fail", "got %d\n%s" % (rc, stderr))
        check("imported %d of %d files; %d failed" % (len(EXPECTED), len(files), len(BROKEN))
              in stdout, "summary line", stdout)
        # the 6 GiB input of 4_softmax_huge (and 2 x 256 MiB of 3_matmul_large) never allocated
        check(peak_kib < 1024 * 1024, "importer peak memory under 1 GiB",
              "%d MiB" % (peak_kib // 1024))
        for fname, msg in BROKEN.items():
            head = "kb-import-kernelbench: %s: " % os.path.join(FILES, fname)
            if isinstance(msg, tuple):
                found = [x for x in stderr.splitlines() if x.startswith(head + msg[0]) and
                         x.endswith(msg[1])]
                check(len(found) == 1, "message for %s" % fname,
                      "want: %s...%s\ngot:\n%s" % (head + msg[0], msg[1], stderr))
                continue
            line = head + msg
            check(line in stderr.splitlines(), "message for %s" % fname,
                  "want: %s\ngot:\n%s" % (line, stderr))
            check(not os.path.exists(os.path.join(out, fname[:-3])), "no bundle for " + fname)
        bundles = sorted(os.listdir(out))
        check(bundles == sorted(EXPECTED), "one bundle per good file", str(bundles))
        for tid, (_, _, _, _, init, factories) in EXPECTED.items():
            d = os.path.join(out, tid)
            try:
                task = json.load(open(os.path.join(d, "task.json")))
                side = json.load(open(os.path.join(d, "kernelbench.json")))
            except (OSError, ValueError) as e:
                check(False, "%s: bundle readable" % tid, str(e))
                continue
            want = expected_task(tid)
            for key in sorted(set(want) | set(task)):
                check(task.get(key) == want.get(key), "%s: task.json \"%s\"" % (tid, key),
                      "got  %s\nwant %s" % (json.dumps(task.get(key)), json.dumps(want.get(key))))
            check(list(task) == list(want), "%s: field order" % tid, str(list(task)))
            check(side["init_inputs"] == init, "%s: init_inputs" % tid, str(side["init_inputs"]))
            check([i["factory"] for i in side["inputs"]] == factories, "%s: factories" % tid,
                  str(side["inputs"]))
            check(side["shapes_from"] == ("cpu" if tid in SHAPES_FROM_CPU else "meta") and
                  side["level"] is None, "%s: shapes_from and level" % tid, str(side))
            src = open(os.path.join(FILES, tid + ".py")).read()
            check(open(os.path.join(d, "reference.py")).read() == src,
                  "%s: reference.py is the task file" % tid)
            stub = open(os.path.join(d, "seeds", "stub.cu")).read()
            check("int kb_forward(" in stub and "return 1;" in stub, "%s: stub seed" % tid)
        ce = json.load(open(os.path.join(out, "8_cross_entropy", "kernelbench.json")))
        check(ce["inputs"][1] == {"name": "targets", "factory": "randint",
                                  "distribution": "integers", "low": 0, "high": 10},
              "randint bounds recorded", str(ce["inputs"][1]))
        tasks = [os.path.join(out, b, "task.json") for b in bundles]
        r = subprocess.run([PY, VALIDATE, "task"] + tasks, capture_output=True, text=True)
        check(r.returncode == 0, "every task.json passes the schema", r.stderr)
        if len(sys.argv) > 2:
            camp = os.path.join(out, "campaign.json")
            with open(camp, "w") as f:
                json.dump({"schema": "kernelbrain.campaign/1", "id": "imported",
                           "backend": "cuda", "budget": {"gpu_seconds": 60},
                           "tasks": [os.path.join(out, b) for b in bundles]}, f)
            r = subprocess.run([sys.argv[2], "validate", camp], capture_output=True, text=True)
            check(r.returncode == 0 and "%d tasks" % len(EXPECTED) in r.stdout,
                  "kb-submit validate accepts the imported bundles", r.stdout + r.stderr)

        # --backend host, --level from a level2/ folder, --atol/--rtol, --json
        lvl = os.path.join(out, "src", "level2")
        os.makedirs(lvl)
        shutil.copy(os.path.join(FILES, "6_conv_relu_bias_add.py"), lvl)
        shutil.copy(os.path.join(FILES, "9_half_matmul.py"), lvl)
        out2 = os.path.join(out, "host")
        rc, stdout, stderr = run(tool, "--out", out2, "--backend", "host", "--atol", "0.01",
                                 "--rtol", "0.02", "--json", os.path.join(lvl, "6_conv_relu_bias_add.py"),
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
        check(os.path.isfile(os.path.join(out2, "l2_6_conv_relu_bias_add", "seeds", "stub.c")),
              "host stub seed is C")
        side = json.load(open(os.path.join(out2, "l2_9_half_matmul", "kernelbench.json")))
        check(side["level"] == 2, "level recorded", str(side))

        # the same id twice in one run
        rc, stdout, stderr = run(tool, "--out", os.path.join(out, "dup"),
                                 os.path.join(FILES, "1_relu.py"), os.path.join(FILES, "1_relu.py"))
        check(rc == 1 and 'task id "1_relu" is taken by' in stderr, "duplicate id", stderr)

        # usage
        rc, stdout, _ = run(tool, "--help")
        check(rc == 0 and "usage: kb-import-kernelbench --out DIR" in stdout, "--help")
        rc, _, stderr = run(tool, os.path.join(FILES, "1_relu.py"))
        check(rc == 2 and "--out DIR is required" in stderr, "missing --out", stderr)
        rc, _, stderr = run(tool, "--out", out)
        check(rc == 2 and "no task FILE given" in stderr, "no files", stderr)
        rc, _, stderr = run(tool, "--out", out, "--atol", "-1", os.path.join(FILES, "1_relu.py"))
        check(rc == 2 and "--atol must be a number >= 0" in stderr, "bad --atol", stderr)
        rc, _, stderr = run(tool, "--out", os.path.join(FILES, "1_relu.py", "x"),
                            os.path.join(FILES, "1_relu.py"))
        check(rc == 2 and "cannot create" in stderr, "unwritable --out", stderr)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
