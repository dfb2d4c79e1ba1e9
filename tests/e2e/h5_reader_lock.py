"""Holds a task file open as a user's notebook does, until killed: plain h5py.File(path) (HDF5's
shared file lock) or, with --swmr, a SWMR reader. Prints the /evaluations row count it saw, then
"open", on stdout. usage: h5_reader_lock.py FILE [--swmr]"""
import sys
import time

import h5py

path = sys.argv[1]
swmr = "--swmr" in sys.argv[2:]
f = h5py.File(path, "r", swmr=swmr) if swmr else h5py.File(path, "r")
print(f["evaluations"].shape[0], flush=True)
print("open", flush=True)
while True:
    time.sleep(1)
