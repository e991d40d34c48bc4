// tutti's failures as MPI errors: each tutti status becomes an MPI error code
// in the nearest standard class (MPI_Error_class finds it), raised through the
// communicator's error handler (MPI_ERRORS_ARE_FATAL aborts, MPI_ERRORS_RETURN
// returns the code), and MPI_Error_string gives tutti's message for it.
#pragma once

#include <mpi.h>

namespace tutti::interpose {

// Raises tutti's `status` on `comm` and returns the MPI error code.
int raise_tutti_error(MPI_Comm comm, int status);

// The text for one of the codes above (tutti's detail of the calling
// thread's last failure), or nullptr for any other code.
const char* tutti_error_text(int code);

}  // namespace tutti::interpose
