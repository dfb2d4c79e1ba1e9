#!/usr/bin/env python3
"""kb-sandbox answers over two pipes as over the runner's socket pair: the GPU harnesses
(tests/gpu/catalogue.py, devkern, timing_probe) start it with stdin and stdout as pipes. Its
confined frames go through the filter's gate, which sent with sendto(2) only: on a pipe that is
ENOTSOCK, and the sandbox ended with status 1 and no line before its hello reply (every
catalogue verdict on the H200 at eb36eb8 was "prepare: None"). Checks a hello and a quit.
usage: sandbox_pipes.py BIN_DIR"""
import json
import os
import select
import struct
import subprocess
import sys
import tempfile
import time


def read_exact(fd, n, deadline):
    buf = b""
    while len(buf) < n:
        left = deadline - time.monotonic()
        r, _, _ = select.select([fd], [], [], max(left, 0))
        if not r:
            return None
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def call(p, msg):
    data = json.dumps(msg).encode()
    p.stdin.write(struct.pack(">I", len(data)) + data)
    p.stdin.flush()
    deadline = time.monotonic() + 30
    head = read_exact(p.stdout.fileno(), 4, deadline)
    if head is None:
        return None
    body = read_exact(p.stdout.fileno(), struct.unpack(">I", head)[0], deadline)
    return None if body is None else json.loads(body)


def main(bin_dir):
    work = tempfile.mkdtemp()
    err = open(os.path.join(work, "stderr.txt"), "w+b")
    p = subprocess.Popen([os.path.join(bin_dir, "kb-sandbox"), "--backend", "host", "--dir", work],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
    hello = call(p, {"op": "hello"})
    bye = call(p, {"op": "quit"}) if hello is not None else None
    try:
        status = p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        status = p.wait()
    err.seek(0)
    tail = err.read().decode(errors="replace")[-500:]
    ok = hello is not None and hello.get("op") == "hello" and status == 0
    print("hello over pipes: %s; quit: %s; exit status %s; stderr: %s" %
          (hello, bye, status, tail.strip() or "(none)"))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
