#!/usr/bin/python3
"""README.md and docs/*.md against the tree: every ctest label they name exists, every kb-*
program they name is built or shipped, every count of tasks in a tasks/ folder is that folder's.

usage: check_docs.py SOURCE_DIR BUILD_DIR CTEST
  labels    `ctest -L X` (X may be 'a|b'), "label `X`", and the list after "labels:" in a
            comment: each must be one `CTEST --print-labels` prints for BUILD_DIR
  programs  kb-<name> as a word (after a space, a backtick, "(", "|" or at a line start; not a
            path part, not a file name such as kb-job.sh, nor the stem of one the page shows,
            kb-level3 of kb-level3.json): a file in BUILD_DIR/bin or tools/ (or
            libkb-<name>.so in BUILD_DIR/bin)
  counts    "<N> <CUDA|host|CPU> tasks in `tasks/<dir>/`": N is the number of task bundles
            (folders with a task.json) in tasks/<dir>; "<N> suite tasks" / "the <N>-task suite":
            the tasks of examples/suite/campaign.json
Each problem is printed as FILE:LINE: what; exit 1 when there is any.
"""
import glob
import json
import os
import re
import subprocess
import sys

src, build, ctest = sys.argv[1:4]
NUMBERS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty".split())}

out = subprocess.run([ctest, "--test-dir", build, "--print-labels"], capture_output=True,
                     text=True, check=True).stdout
labels = {line.strip() for line in out.splitlines()[out.splitlines().index("All Labels:") + 1:]
          if line.strip()} if "All Labels:" in out else set()
programs = {os.path.basename(p) for p in glob.glob(os.path.join(build, "bin", "kb-*"))}
programs |= {os.path.basename(p) for p in glob.glob(os.path.join(src, "tools", "kb-*"))}
# a library kb-launch ships beside them (libkb-confine.so) names its messages "kb-confine"
programs |= {os.path.basename(p)[3:-3] for p in glob.glob(os.path.join(build, "bin", "libkb-*.so"))}
bundles = {d: len(glob.glob(os.path.join(src, "tasks", d, "*", "task.json")))
           for d in os.listdir(os.path.join(src, "tasks"))
           if os.path.isdir(os.path.join(src, "tasks", d))}
with open(os.path.join(src, "examples", "suite", "campaign.json"), encoding="utf-8") as f:
    suite = len(json.load(f)["tasks"])

LABEL_RES = [re.compile(r"ctest\b[^`\n]*?-L\s+['\"]?([A-Za-z0-9_|-]+)"),
             re.compile(r"\blabels? `([a-z0-9_-]+)`"),
             # "labels:" (plural) only: "label: torch_only" is a compile log's line
             re.compile(r"\blabels: ([a-z0-9_-]+(?:, [a-z0-9_-]+)*)")]
PROGRAM_RE = re.compile(r"(?:^|(?<=[\s`(|]))(kb-[a-z][a-z0-9-]*[a-z0-9])(?![a-z0-9.\-/_])")
COUNT_RE = re.compile(r"\b(\d+|[A-Za-z]+) (?:CUDA |host |CPU )?tasks in `?tasks/([a-z_]+)/?`?")
SUITE_RES = [re.compile(r"\b(\d+|[A-Za-z]+) suite tasks\b"),
             re.compile(r"\bthe (\d+|[a-z]+)-task (?:CUDA )?suite\b")]


def number(word):
    return int(word) if word.isdigit() else NUMBERS.get(word.lower())


problems = []
files = [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "docs", "*.md")))
for path in files:
    rel = os.path.relpath(path, src)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.splitlines()
    for no, line in enumerate(lines, 1):
        for rx in LABEL_RES:
            for m in rx.finditer(line):
                for label in re.split(r"[|,] ?", m.group(1)):
                    if label and label not in labels:
                        problems.append("%s:%d: ctest label \"%s\" does not exist (labels: %s)"
                                        % (rel, no, label, ", ".join(sorted(labels))))
        for m in PROGRAM_RE.finditer(line):
            # a file's stem the page shows with its extension (`kb-level3.json` gives the
            # campaign `kb-level3`) is a name, not a program
            if m.group(1) not in programs and not re.search(re.escape(m.group(1)) + r"\.[a-z]", text):
                problems.append("%s:%d: program \"%s\" is neither in build/bin nor in tools/"
                                % (rel, no, m.group(1)))
        for m in COUNT_RE.finditer(line):
            n, d = number(m.group(1)), m.group(2)
            if n is not None and bundles.get(d) != n:
                problems.append("%s:%d: \"%s\": tasks/%s holds %s task bundles"
                                % (rel, no, m.group(0), d, bundles.get(d, 0)))
        for rx in SUITE_RES:
            for m in rx.finditer(line):
                n = number(m.group(1))
                if n is not None and n != suite:
                    problems.append("%s:%d: \"%s\": the suite (examples/suite) has %d tasks"
                                    % (rel, no, m.group(0), suite))
for p in problems:
    print(p)
print("check_docs: %d files, %d labels, %d programs known; %d problems"
      % (len(files), len(labels), len(programs), len(problems)), file=sys.stderr)
sys.exit(1 if problems else 0)
