/* What every opener of a task's HDF5 file sets (see kb/h5.h). */
#include "kb/h5.h"

herr_t kb_h5_bound_retries(hid_t fapl) {
  return H5Pset_metadata_read_attempts(fapl, KB_H5_READ_ATTEMPTS);
}
