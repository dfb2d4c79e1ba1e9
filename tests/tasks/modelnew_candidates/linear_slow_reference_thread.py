# Slows down what it is compared with from a thread: starts a Python thread that keeps the
# interpreter busy (holding the GIL in a loop) whenever the candidate itself is not calling, so
# the task's module, timed beside it in this process as torch eager and the same-run baseline,
# runs slower, and sleeps while the candidate runs. rejected (a thread it started was still
# running), not ok.
import threading
import time

import torch.nn as nn

MINE = [False]


def spin():
    while True:
        if MINE[0]:
            time.sleep(0.00001)
            continue
        x = 0
        for i in range(2000):
            x += i


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        threading.Thread(target=spin, daemon=True).start()

    def forward(self, x):
        MINE[0] = True
        try:
            return self.linear(x)
        finally:
            MINE[0] = False
