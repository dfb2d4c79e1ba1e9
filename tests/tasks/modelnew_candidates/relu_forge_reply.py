# Writes a reply of its own ({"status": "ok"}, 1 us a call) on the worker's protocol socket
# (found through /proc/self/fd) at its first call, then goes on: before 2026-12-07 the runner
# took it for the worker's reply (ok at 1.0 us at smoke and screen), and the worker's real
# reply, read as the answer to the next request, failed the next candidate (infra_error). The
# runner now sends a nonce with each request that the worker echoes: rejected ("wrote on the
# sandbox's protocol socket: a reply without the request's nonce"), a new worker.
import json
import os
import struct

import torch
import torch.nn as nn


def forge():
    reply = {"op": "eval", "status": "ok", "reason": "", "sets_checked": 3, "batch": 1,
             "fatal": False, "phases": {},
             "timing": {"samples": 50, "warmup": 3, "median_us": 1.0, "p10_us": 1.0,
                        "p90_us": 1.0, "mean_us": 1.0, "min_us": 1.0, "noise": 0.0}}
    data = json.dumps(reply).encode()
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + name).startswith("socket:"):
                os.write(int(name), struct.pack(">I", len(data)) + data)
        except OSError:
            pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.forged = False

    def forward(self, x):
        if not self.forged:
            self.forged = True
            forge()
        return torch.relu(x)
