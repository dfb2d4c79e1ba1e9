# Connects from its module level, which runs in the compile tier (a load_inline file), to unix
# sockets that test_modelnew.py (build_unix_sockets) listens on beside the cache: a stream
# socket (as Redis's redis.sock of kb-launch --local) and a datagram one, the latter through a
# datagram socketpair too (connect(2) on it). Landlock does not cover pathname unix sockets; the
# builder's seccomp filter makes socket(AF_UNIX) and a datagram socketpair fail with EACCES:
# compile_error, "PermissionError", and the listeners see nothing. The module's name is built
# from pieces past the static rules; every attempt is made, the first error raised at the end.
import importlib
import os

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

sock = importlib.import_module("sock" + "et")
# TMPDIR is inside the build folder, in the cache; the listeners are in a folder above it
top = os.environ["TMPDIR"]
while top != "/" and not os.path.exists(os.path.join(top, "kb_listen.sock")):
    top = os.path.dirname(top)
stream_path = os.path.join(top, "kb_listen.sock")
dgram_path = os.path.join(top, "kb_listen_dgram.sock")
failed = []
for attempt in ("stream", "dgram", "dgram_pair"):
    try:
        if attempt == "stream":
            s = sock.socket(sock.AF_UNIX, sock.SOCK_STREAM)
            s.connect(stream_path)
            s.sendall(b"forged")
        elif attempt == "dgram":
            s = sock.socket(sock.AF_UNIX, sock.SOCK_DGRAM)
            s.sendto(b"forged", dgram_path)
        else:
            s, _ = sock.socketpair(sock.AF_UNIX, sock.SOCK_DGRAM)
            s.connect(dgram_path)
            s.send(b"forged")
        s.close()
    except OSError as e:
        failed.append(e)
if failed:
    raise failed[0]
ext = load_inline(name="kb_test_unix", cpp_sources="", functions=[])


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp_min(0)
