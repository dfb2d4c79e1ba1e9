"""The PyTorch worker (runner/sandbox/kb_sandbox_torch.py, as built) imported into a test's own
process, for the tests that call its functions directly (test_import, test_jit_copy,
test_speed_settings)."""
import importlib.util


def load_worker(path, with_torch=True):
    """The worker module loaded from `path`; with `with_torch`, torch imported and handed to it
    (open_device does that in the worker itself)."""
    spec = importlib.util.spec_from_file_location("kb_sandbox_torch", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    if with_torch:
        import torch
        m.torch = torch
    return m
