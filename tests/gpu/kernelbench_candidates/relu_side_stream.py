# A KernelBench-format cheat for the ReLU tasks, written for kernelbrain's GPU tests: the work
# goes on a stream of its own that the current stream never waits for, so the timing events on
# the current stream see only the launches. The work is made long (a spin kernel of about
# 0.5 ms before the ReLU, one launch) so that what the device still has to do after the window
# is plain: on the H200 the first form of this file, 20 short launches, was launch-bound, its
# window held the whole work and it measured slower than the honest ReLU, not faster.
# Expected: rejected, "work the timer did not see" (the PyTorch worker's untimed_work).
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
            torch.cuda._sleep(1000000)
            torch.clamp_min(x, 0, out=out)
        return out
