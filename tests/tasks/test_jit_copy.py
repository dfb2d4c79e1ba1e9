"""A confined PyTorch worker's JIT caches (ctest tasks_jit_copy): point_jit_caches() of
runner/sandbox/kb_sandbox_torch.py gives a confined worker a writable copy of a build's
`<key>.jit` folder in its own --dir, so that inductor writing into its cache while it runs a
cached module does not fail on the read-only shared cache (on an H100, torch 2.11: three honest
torch.compile seeds ended `crash`, PermissionError in `<key>.jit/inductor/`). In a child process
confined as the worker confines itself (libkb-confine.so: seccomp + Landlock, the cache folder
read-only): the caches point into the copy, a file written there as inductor writes its own
(a temporary file renamed into place) lands, the shared folder is unchanged and refuses the same
write; the absolute paths the cached entries hold (text, and a pickle's length-prefixed
strings) name the copy, not the shared folder, and a write through such a path lands; a second
use of the build reuses its copy; a third build's copy replaces the oldest of two; a trusted
(unconfined) worker points at the shared folder itself.

usage: test_jit_copy.py WORKER   (the build's kb_sandbox_torch.py, libkb-confine.so beside it)
"""
import ctypes
import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile

# the child runs under -I (no script folder on sys.path): the helper beside this file
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from worker_module import load_worker  # noqa: E402

failures = []


def check(cond, what):
    print("%s: %s" % ("ok" if cond else "FAIL", what))
    if not cond:
        failures.append(what)


def key_of(name):
    """A build key as the runner makes them (64 hex digits)."""
    return hashlib.sha256(name.encode()).hexdigest()


def build(cache, key):
    """A build folder `<key>.kb` whose build.json names its JIT folder `<key>.jit`, holding an
    inductor entry and a Triton kernel as the compile tier's warm-up leaves them; the entry
    names files of the cache by absolute path, as inductor's do (in text, and pickled)."""
    jit = os.path.join(cache, key + ".jit")
    os.makedirs(os.path.join(jit, "inductor", "ab"))
    os.makedirs(os.path.join(jit, "triton", "cd"))
    out = os.path.join(jit, "inductor", "ee", "output.py")
    with open(os.path.join(jit, "inductor", "ab", "graph.py"), "w") as f:
        f.write("# cached output code of %s\nPATH = %r\n" % (key, out))
    with open(os.path.join(jit, "inductor", "ab", "entry.pkl"), "wb") as f:
        pickle.dump({"artifact_path": out, "cubin": os.path.join(jit, "triton", "cd")}, f)
    with open(os.path.join(jit, "triton", "cd", "kernel.cubin"), "wb") as f:
        f.write(b"\x7fELF" + key.encode())
    kb = os.path.join(cache, key + ".kb")
    os.makedirs(kb)
    with open(os.path.join(kb, "build.json"), "w") as f:
        json.dump({"status": "ok", "label": "torch_compile", "jit": True, "jit_dir": jit}, f)
    return kb, jit


def inductor_write(folder):
    """Writes a file into `folder` as inductor writes its cache (write_atomic: a temporary
    `.<pid>.<tid>.tmp` renamed into place); the error's text, or None."""
    sub = os.path.join(folder, "ur")
    try:
        os.makedirs(sub, exist_ok=True)
        tmp = os.path.join(sub, ".%d.1.tmp" % os.getpid())
        with open(tmp, "w") as f:
            f.write("# new output code\n")
        os.rename(tmp, os.path.join(sub, "new.py"))
        return None
    except OSError as e:
        return "%s: %s" % (type(e).__name__, e)


def confined_child(worker, cache, rw):
    """Runs in the child: confines itself as the worker does, then uses three builds."""
    m = load_worker(worker)
    m.CONF = m.Confinement({"trusted": False, "dir": rw, "ro": [cache]})
    why = ctypes.create_string_buffer(512)
    rc = m.CONF.lib.kb_confine_python(rw.encode(), ":".join(m.readable_paths([cache])).encode(),
                                      why, ctypes.sizeof(why))
    check(rc == 0, "confined (%s)" % why.value.decode(errors="replace"))
    level = m.CONF.lib.kb_confine_level().decode()
    print("confinement level: %s" % level)
    k1, k2, k3 = key_of("k1"), key_of("k2"), key_of("k3")
    kb1, jit1 = os.path.join(cache, k1 + ".kb"), os.path.join(cache, k1 + ".jit")
    m.point_jit_caches(kb1)
    ind = os.environ["TORCHINDUCTOR_CACHE_DIR"]
    tri = os.environ["TRITON_CACHE_DIR"]
    copy1 = os.path.dirname(ind)
    check(os.path.dirname(copy1) == os.path.join(os.path.realpath(rw), "jit") and
          copy1.endswith(k1[-40:] + ".jit") and tri == os.path.join(copy1, "triton"),
          "confined: the caches point into the worker's copy (%s, %s)" % (ind, tri))
    check(len(copy1) == len(jit1), "the copy's path is as long as the build's (%d, %d)"
          % (len(copy1), len(jit1)))
    with open(os.path.join(ind, "ab", "graph.py")) as f:
        text = f.read()
    with open(os.path.join(ind, "ab", "entry.pkl"), "rb") as f:
        entry = pickle.load(f)
    check(jit1 not in text and os.path.join(copy1, "inductor", "ee", "output.py") in text,
          "the cached text names the copy's files, not the shared folder's")
    check(entry["artifact_path"] == os.path.join(ind, "ee", "output.py") and
          entry["cubin"] == os.path.join(tri, "cd"),
          "the pickled entry loads and names the copy's files (%s)" % entry)
    try:
        os.makedirs(os.path.dirname(entry["artifact_path"]), exist_ok=True)
        with open(entry["artifact_path"], "w") as f:
            f.write("# written through the cached path\n")
        through = None
    except OSError as e:
        through = "%s: %s" % (type(e).__name__, e)
    check(through is None, "a write through the cached path lands in the copy (%s)" % through)
    check(os.path.isfile(os.path.join(ind, "ab", "graph.py")) and
          os.path.isfile(os.path.join(tri, "cd", "kernel.cubin")),
          "the copy holds the build's inductor entry and Triton kernel")
    err = inductor_write(ind)
    check(err is None and os.path.isfile(os.path.join(ind, "ur", "new.py")),
          "inductor's write into the copy lands (%s)" % err)
    shared = inductor_write(os.path.join(jit1, "inductor"))
    if "landlock" in level:
        check(shared is not None, "the same write into the shared folder is refused (%s)"
              % shared)
    check(not os.path.exists(os.path.join(jit1, "inductor", "ur", "new.py")),
          "the shared folder is unchanged")
    ino = os.stat(copy1).st_ino
    m.point_jit_caches(kb1)
    check(os.stat(copy1).st_ino == ino and
          os.path.isfile(os.path.join(copy1, "inductor", "ur", "new.py")),
          "a second use of the build reuses its copy")
    m.point_jit_caches(os.path.join(cache, k2 + ".kb"))
    m.point_jit_caches(os.path.join(cache, k3 + ".kb"))
    left = sorted(n[-44:-4] for n in os.listdir(os.path.join(rw, "jit")))
    check(left == sorted([k2[-40:], k3[-40:]]), "three builds: the last two copies kept (%s)"
          % left)
    return 1 if failures else 0


def main(argv):
    if len(argv) == 4 and argv[1] == "--child":
        return confined_child(os.environ["KB_JIT_WORKER"], argv[2], argv[3])
    if len(argv) != 2:
        sys.exit(__doc__)
    worker = argv[1]
    if not os.path.isfile(os.path.join(os.path.dirname(worker), "libkb-confine.so")):
        print("SKIP: no libkb-confine.so next to %s" % worker)
        return 77
    tmp = tempfile.mkdtemp(prefix="kb-jit-copy.")
    try:
        cache = os.path.join(tmp, "cache")
        for k in ("k1", "k2", "k3"):
            build(cache, key_of(k))
        rw = os.path.join(tmp, "rw")
        os.makedirs(rw)
        p = subprocess.run([sys.executable, "-I", os.path.abspath(__file__), "--child", cache,
                            rw], env=dict(os.environ, KB_JIT_WORKER=worker),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=120)
        print(p.stdout, end="")
        check(p.returncode == 0, "the confined child passed (exit %d)" % p.returncode)
        m = load_worker(worker)
        m.CONF = m.Confinement({"trusted": True, "dir": rw, "ro": [cache]})
        m.point_jit_caches(os.path.join(cache, key_of("k1") + ".kb"))
        check(os.environ["TORCHINDUCTOR_CACHE_DIR"] == os.path.join(cache, key_of("k1") + ".jit",
                                                                    "inductor"),
              "trusted worker: the caches are the build's own folder")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
