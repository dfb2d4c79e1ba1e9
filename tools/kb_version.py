"""The version line of the Python tools, as the C programs print it (docs/cli.md):
"<prog> <version> (commit <12 hex digits>)", or "unknown" for the commit outside a git
checkout. The version is the project's (CMakeLists.txt's project(... VERSION x.y.z)), read from
the source tree this file lives in; the tools import this module from their own folder.
"""
import os
import re
import subprocess

HERE = os.path.dirname(os.path.realpath(__file__))


def _project_version():
    d = HERE
    for _ in range(4):  # tools/ or build/bin/: the top CMakeLists.txt is a few folders up
        path = os.path.join(d, "CMakeLists.txt")
        try:
            with open(path, encoding="utf-8") as f:
                m = re.search(r"project\(kernelbrain\s+VERSION\s+([0-9.]+)", f.read())
            if m:
                return m.group(1), d
        except OSError:
            pass
        d = os.path.dirname(d)
    return "unknown", HERE


def version_line(prog):
    """The line --version prints for `prog` (str)."""
    version, top = _project_version()
    try:
        r = subprocess.run(["git", "-C", top, "rev-parse", "--short=12", "HEAD"],
                           capture_output=True, text=True, timeout=10, check=False)
        commit = r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else "unknown"
    except (OSError, subprocess.SubprocessError):
        commit = "unknown"
    return f"{prog} {version} (commit {commit})"
