# A KernelBench-format cheat for level 1 task 19 (ReLU), written for kernelbrain's GPU tests: the
# work goes on a stream of its own that the current stream never waits for, so the timing events
# on the current stream see an empty window (and the work is done 20 times over, so that what
# the device still has to do after the window is plain). Expected: rejected, "work the timer did
# not see" (the PyTorch worker's untimed_work).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side = None

    def forward(self, x):
        if self.side is None:
            self.side = torch.cuda.Stream()
        out = torch.empty_like(x)
        self.side.wait_stream(torch.cuda.current_stream())  # the drawn inputs are ready
        with torch.cuda.stream(self.side):
            for _ in range(20):
                torch.clamp_min(x, 0, out=out)
        return out
