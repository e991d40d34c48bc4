// MPI_Finalize and MPI_Error_string: the ends of the library's life and of
// its errors.
#include <mpi.h>

#include <algorithm>
#include <cstring>

#include "interpose/comm_table.hpp"
#include "interpose/errors.hpp"
#include "interpose/guard.hpp"
#include "interpose/progress_hook.hpp"
#include "interpose/stats.hpp"

using namespace tutti::interpose;

extern "C" {

// The statistics need MPI_COMM_WORLD, and tutti's communicators need MPI for
// their destruction: both happen before the MPI library finalises.
int MPI_Finalize(void) {
  if (!inside_tutti()) {
    report_stats();
    unhook_progress();
    destroy_all_communicators();
  }
  return PMPI_Finalize();
}

int MPI_Error_string(int errorcode, char* string, int* resultlen) {
  const char* text = inside_tutti() ? nullptr : tutti_error_text(errorcode);
  if (!text || !string || !resultlen) return PMPI_Error_string(errorcode, string, resultlen);
  const size_t n = std::min(std::strlen(text), static_cast<size_t>(MPI_MAX_ERROR_STRING - 1));
  std::memcpy(string, text, n);
  string[n] = '\0';
  *resultlen = static_cast<int>(n);
  return MPI_SUCCESS;
}

}  // extern "C"
