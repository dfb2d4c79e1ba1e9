#!/usr/bin/python3
"""kbresults: a kernelbrain results folder as tables, for notebooks.

usage: kbresults.py RESULTS_DIR [--table candidates|evaluations|llm] [--csv]
       kbresults.py --version

    import kbresults                      # build/bin (or tools/, or where it is installed) on sys.path
    r = kbresults.load("results/demo")
    r.evaluations["median_us"]            # numpy arrays by column; r.evaluations.frame() is a
    r.candidates.frame()                  # pandas DataFrame when pandas is installed

Reads every <task>.h5 of RESULTS_DIR (schemas/hdf5-layout.md) with h5py, up to its committed
counts (as an SWMR reader when the scheduler still writes it), and summary.json when present.
Three tables, one row per row of the files, every task's rows together:

  candidates   /candidates plus "task", and "source": the text resolved from /sources/data
               (source_offset and source_len are dropped)
  evaluations  /evaluations plus "task" and "compile_log" (None when there is none; the
               offset and length are dropped)
  llm          /llm/requests plus "task", "prompt" and "response" from /llm/text (format-2
               files; empty in format 1)

Fixed-size strings come back as str (UTF-8), not bytes. Unknowns become NaN: the floats are NaN
in the files already, and the integer columns whose -1 means unknown (best_tier, registers,
spills, shared_bytes, the trace_* counts: UNKNOWN_INT below, as docs/report.md lists them)
become float columns with NaN there. Other integers (attempt, samples, cost_ms...) stay
integers. Standard library, h5py and numpy; pandas only for frame(). Exit status: 0, 1 when
the folder has no result files, 2 on usage errors.
"""
import glob
import json
import os
import sys

import h5py
import numpy as np

KB_VERSION = "unknown"  # the build's copy in build/bin says "<version> (commit <sha>)"

# Integer columns whose -1 means "unknown" (schemas/hdf5-layout.md); NaN in the tables.
UNKNOWN_INT = {
    "candidates": ("best_tier",),
    "evaluations": ("registers", "spills", "shared_bytes", "trace_kernels",
                    "trace_own_kernels", "trace_own_ns", "trace_other_ns", "trace_late_ns",
                    "trace_dropped"),
    "llm": (),
}
# Text kept in a byte heap: (table, heap dataset, offset column, length column, new column).
HEAPS = (
    ("candidates", "sources/data", "source_offset", "source_len", "source"),
    ("evaluations", "compile_logs/data", "compile_log_offset", "compile_log_len", "compile_log"),
    ("llm", "llm/text", "prompt_offset", "prompt_len", "prompt"),
    ("llm", "llm/text", "response_offset", "response_len", "response"),
)
DATASETS = {"candidates": "candidates", "evaluations": "evaluations", "llm": "llm/requests"}
COMMIT_KEYS = {"candidates": "candidates", "evaluations": "evaluations", "llm": "llm"}


class Table:
    """Columns of equal length: name -> numpy array (str columns are object arrays)."""

    def __init__(self, columns=None):
        self.columns = dict(columns or {})

    def __getitem__(self, name):
        return self.columns[name]

    def __contains__(self, name):
        return name in self.columns

    def __len__(self):
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def names(self):
        return list(self.columns)

    def rows(self):
        """The rows as dicts (plain Python values)."""
        keys = self.names()
        for i in range(len(self)):
            yield {k: _plain(self.columns[k][i]) for k in keys}

    def frame(self):
        """A pandas DataFrame of the table (pandas must be installed)."""
        import pandas  # optional: only this method needs it
        return pandas.DataFrame(self.columns)


class Results:
    """A results folder: tables candidates, evaluations, llm; summary (dict or None); files."""

    def __init__(self, folder, candidates, evaluations, llm, summary, files):
        self.folder = folder
        self.candidates = candidates
        self.evaluations = evaluations
        self.llm = llm
        self.summary = summary
        self.files = files


def _plain(v):
    if isinstance(v, np.generic):
        return v.item()
    return v


def _text(b):
    return b.decode("utf-8", "replace") if isinstance(b, bytes) else str(b)


# Reads of one piece of metadata whose checksum fails, at most, for an SWMR reader: kb/h5.h's
# KB_H5_READ_ATTEMPTS, the C readers' bound. HDF5 1.10 retries such a read 100 times, sleeping
# from 1 ns doubling each time, so a damaged file held this reader asleep for good; h5py has
# no call for it, so it is set through the libhdf5 h5py loaded (found in /proc/self/maps).
H5_READ_ATTEMPTS = 30


def _swmr_fapl():
    """An SWMR reader's file access list with the read attempts bounded (unbounded where the
    library cannot be found: not Linux)."""
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_libver_bounds(h5py.h5f.LIBVER_LATEST, h5py.h5f.LIBVER_LATEST)
    try:
        with open("/proc/self/maps") as maps:
            libs = [ln.split()[-1] for ln in maps
                    if "/libhdf5" in ln and "_hl" not in ln and ".so" in ln]
    except OSError:
        libs = []
    if libs:
        import ctypes
        lib = ctypes.CDLL(libs[0])
        lib.H5Pset_metadata_read_attempts.argtypes = [ctypes.c_int64, ctypes.c_uint]
        lib.H5Pset_metadata_read_attempts(fapl.id, H5_READ_ATTEMPTS)
    return fapl


def open_task_file(path):
    """A task file, read-only: plainly, else (the scheduler still has it open, or was killed
    with it open) as an SWMR reader. A file neither opens raises OSError naming it."""
    try:
        return h5py.File(path, "r")
    except OSError:
        pass
    try:
        fid = h5py.h5f.open(os.fsencode(path), h5py.h5f.ACC_RDONLY | h5py.h5f.ACC_SWMR_READ,
                            fapl=_swmr_fapl())
    except OSError as e:
        raise OSError(f"{path}: cannot open as an HDF5 file: {e}") from None
    return h5py.File(fid)



def _columns(rows, table, task):
    """A compound array as columns: decoded strings, -1 unknowns as NaN."""
    cols = {"task": np.array([task] * len(rows), dtype=object)}
    for name in rows.dtype.names:
        v = rows[name]
        if v.dtype.kind == "S":
            v = np.array([_text(x) for x in v], dtype=object)
        elif name in UNKNOWN_INT[table]:
            v = v.astype(np.float64)
            v[v == -1] = np.nan
        cols[name] = v
    return cols


def _resolve(f, table, cols):
    """Replaces each heap's offset and length columns of `table` by the text they point at."""
    for t, heap, off, length, new in HEAPS:
        if t != table or off not in cols:
            continue
        data = f[heap] if heap in f else None
        texts = []
        for o, n in zip(cols.pop(off), cols.pop(length)):
            o, n = int(o), int(n)
            texts.append(data[o:o + n].tobytes().decode("utf-8", "replace")
                         if data is not None and n > 0 else None)
        if table == "candidates":  # every candidate has a source, even an empty one
            texts = [x if x is not None else "" for x in texts]
        cols[new] = np.array(texts, dtype=object)


def _read_file(path):
    try:
        return _read_file_h5(path)
    except KeyError as e:  # h5py's for an object whose header does not read back
        raise OSError(f"{path}: cannot read: {e.args[0] if e.args else e}") from None


def _read_file_h5(path):
    out = {}
    with open_task_file(path) as f:
        task = _text(f.attrs["task"])
        commit = f.attrs["commit"]
        names = commit.dtype.names or ()
        for table, ds in DATASETS.items():
            if ds not in f:
                continue
            n = int(commit[COMMIT_KEYS[table]]) if COMMIT_KEYS[table] in names else f[ds].shape[0]
            cols = _columns(f[ds][:n], table, task)
            _resolve(f, table, cols)
            out[table] = cols
    return out


def _concat(parts):
    if not parts:
        return Table()
    names = list(parts[0])
    for p in parts[1:]:
        names += [k for k in p if k not in names]
    cols = {}
    for k in names:
        vals = []
        for p in parts:
            n = len(next(iter(p.values())))
            vals.append(p[k] if k in p else np.full(n, np.nan))
        cols[k] = np.concatenate(vals) if vals else np.array([])
    return Table(cols)


def load(folder):
    """Reads results folder `folder` (str): every *.h5 (those summary.json names first, in its
    order, then any others, sorted) and summary.json. Returns a Results. Raises
    FileNotFoundError when the folder has no result files."""
    summary = None
    spath = os.path.join(folder, "summary.json")
    if os.path.exists(spath):
        with open(spath, encoding="utf-8") as f:
            summary = json.load(f)
    files = sorted(glob.glob(os.path.join(folder, "*.h5")))
    if summary:
        named = [os.path.join(folder, os.path.basename(t["file"])) for t in summary.get("tasks", [])
                 if t.get("file")]
        files = [p for p in named if p in files] + [p for p in files if p not in named]
    if not files:
        raise FileNotFoundError("no result files (*.h5) in %s" % folder)
    parts = {t: [] for t in DATASETS}
    for path in files:
        for table, cols in _read_file(path).items():
            parts[table].append(cols)
    return Results(folder, _concat(parts["candidates"]), _concat(parts["evaluations"]),
                   _concat(parts["llm"]), summary, files)


def _csv(table, out):
    import csv
    w = csv.writer(out)
    w.writerow(table.names())
    for row in table.rows():
        w.writerow(["" if v is None or (isinstance(v, float) and v != v) else v
                    for v in row.values()])


def main(argv):
    if "--version" in argv:
        print("kbresults.py %s" % KB_VERSION)
        return 0
    if "--help" in argv or "-h" in argv:
        print(__doc__.strip())
        return 0
    args, table, csv_out = [], None, False
    it = iter(argv)
    for a in it:
        if a == "--table":
            table = next(it, None)
        elif a == "--csv":
            csv_out = True
        elif a.startswith("-"):
            args = None
            print("kbresults.py: unknown option %s" % a, file=sys.stderr)
            break
        else:
            args.append(a)
    if args is None or len(args) != 1 or (table is not None and table not in DATASETS):
        if args is not None:
            print("kbresults.py: %s" % ("give one RESULTS_DIR" if args is None or len(args) != 1
                                        else "--table: candidates, evaluations or llm"),
                  file=sys.stderr)
        print("Try 'kbresults.py --help' for more information.", file=sys.stderr)
        return 2
    try:
        r = load(args[0])
    except OSError as e:  # no such folder, a file HDF5 cannot read (named)
        print("kbresults.py: %s" % e, file=sys.stderr)
        return 1
    if table and csv_out:
        _csv(getattr(r, table), sys.stdout)
        return 0
    for name in (table,) if table else DATASETS:
        t = getattr(r, name)
        print("%-12s %6d rows  %s" % (name, len(t), " ".join(t.names())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
