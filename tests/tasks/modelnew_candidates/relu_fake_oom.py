# Raises an out-of-memory error of its own from forward: RuntimeError("CUDA out of memory.
# ..."). The worker took any error whose text said "out of memory" for the shared device's
# (infra_error, the worker replaced, the item retried up to max_attempts), so a file could
# turn its own failure into the runner's (found 2026-12-07 on the CPU: infra_error). Now only
# the caching allocator's count of failed allocations makes it the device's: crash.
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 GiB")
