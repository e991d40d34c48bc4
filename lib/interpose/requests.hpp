// Non-blocking collectives that tutti runs hand the program an MPI request:
// a generalized request (MPI_Grequest_start), so every MPI function that
// takes requests accepts it, and MPI's own requests keep working beside it.
// tutti makes progress only when asked, so MPI_Wait, MPI_Test and their
// -all/-any/-some forms, MPI_Request_get_status and MPI_Request_free are
// defined here: they drive tutti's request, mark the generalized request
// complete when it is, and let MPI do the rest (statuses, freeing, MPI's own
// requests in the same array).
#pragma once

#include <mpi.h>

#include <memory>

#include "tutti/tutti.h"

namespace tutti::interpose {

// Takes ownership of `started`; `keep` lives until the request is freed.
int wrap_tutti_request(MPI_Comm comm, tutti_request_t started, std::shared_ptr<void> keep,
                       MPI_Request* request);

// Whether any request wrap_tutti_request made is not yet freed (one
// relaxed atomic load).
bool tutti_requests_outstanding();

}  // namespace tutti::interpose
