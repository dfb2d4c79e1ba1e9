/* What every opener of a task's HDF5 file sets on its file access property list (the
 * scheduler's store, the report and the export). */
#ifndef KB_H5_H
#define KB_H5_H

#include <hdf5.h>

/* Reads of one piece of metadata whose checksum fails, at most, for a file opened in SWMR mode
 * (reader or writer). HDF5 1.10 retries such a read, as a writer may be flushing that piece, and
 * sleeps between attempts from 1 ns doubling each time; its default of 100 attempts is a sleep of
 * 2^100 ns: a damaged file (a flipped byte, a disk's bad block, a copy cut mid-write) held
 * kb-scheduler (renewing its lock, so no other could take over) and `report`/`export` asleep
 * for good. 30 attempts end in about 2 s with "incorrect metadata checksum after all read
 * attempts", which still outlasts a live writer's flush; the scheduler then rebuilds the file
 * from Redis (schemas/hdf5-layout.md, "Recovery"). */
#define KB_H5_READ_ATTEMPTS 30

/* Sets KB_H5_READ_ATTEMPTS on the file access property list `fapl` (borrowed). Returns HDF5's
 * result: negative on failure. */
herr_t kb_h5_bound_retries(hid_t fapl);

#endif
