"""The PyTorch worker's same-run arms run with the speed settings the evaluation began with
(ctest tasks_speed_settings): Surface.initial_speed() of runner/sandbox/kb_sandbox_torch.py.
A candidate may set torch's speed settings for itself (cuDNN off, fewer host threads, grad
mode), and SameRunArm times the same-run baseline and torch eager in the candidate's own process:
inside the context the settings are the evaluation's first ones, after it the candidate's
again, and Surface.changed() sets the first ones back at the end, reporting nothing.

usage: test_speed_settings.py WORKER   (the build's kb_sandbox_torch.py)
"""
import sys

from worker_module import load_worker

failures = []


def check(cond, what):
    print("%s: %s" % ("ok" if cond else "FAIL", what))
    if not cond:
        failures.append(what)


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    m = load_worker(argv[1])
    torch = m.torch
    m.Surface.parse()
    torch.set_num_threads(2)
    torch.set_grad_enabled(False)
    first = (torch.get_num_threads(), torch.backends.cudnn.enabled, torch.is_grad_enabled())
    surface = m.Surface()  # the evaluation begins
    # the candidate's own settings
    torch.set_num_threads(1)
    torch.backends.cudnn.enabled = False
    torch.set_grad_enabled(True)
    theirs = (torch.get_num_threads(), torch.backends.cudnn.enabled, torch.is_grad_enabled())
    with surface.initial_speed():
        inside = (torch.get_num_threads(), torch.backends.cudnn.enabled, torch.is_grad_enabled())
    after = (torch.get_num_threads(), torch.backends.cudnn.enabled, torch.is_grad_enabled())
    check(inside == first, "inside: the evaluation's first settings %s (the candidate's %s)"
          % (inside, theirs))
    check(after == theirs, "after: the candidate's own again %s" % (after,))
    what = surface.changed(set_back=True)
    now = (torch.get_num_threads(), torch.backends.cudnn.enabled, torch.is_grad_enabled())
    check(what is None and now == first, "at the end: set back (%s), nothing reported (%s)"
          % (now, what))
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
