#include "interpose/errors.hpp"

#include <array>
#include <mutex>
#include <string>

#include "tutti/tutti.h"

namespace tutti::interpose {
namespace {

constexpr int kStatuses = TUTTI_ERR_INTERNAL + 1;
std::array<int, kStatuses> codes{};  // 0: not made yet (MPI_SUCCESS is no error code)
std::once_flag codes_made;

int standard_class(int status) {
  switch (status) {
    case TUTTI_ERR_INVALID_ARGUMENT: return MPI_ERR_ARG;
    case TUTTI_ERR_UNSUPPORTED: return MPI_ERR_UNSUPPORTED_OPERATION;
    case TUTTI_ERR_OUT_OF_MEMORY: return MPI_ERR_NO_MEM;
    case TUTTI_ERR_INTERNAL: return MPI_ERR_INTERN;
    default: return MPI_ERR_OTHER;  // timeouts, transport failures, mismatched calls
  }
}

void make_codes() {
  for (int status = 1; status < kStatuses; ++status) {
    int code = 0;
    if (PMPI_Add_error_code(standard_class(status), &code) != MPI_SUCCESS) continue;
    const std::string text = std::string("tutti: ") + tutti_strerror(status);
    PMPI_Add_error_string(code, text.c_str());
    codes[status] = code;
  }
}

}  // namespace

int raise_tutti_error(MPI_Comm comm, int status) {
  std::call_once(codes_made, make_codes);
  int code = status > 0 && status < kStatuses && codes[status] ? codes[status]
                                                              : standard_class(status);
  PMPI_Comm_call_errhandler(comm, code);
  return code;
}

const char* tutti_error_text(int code) {
  for (int status = 1; status < kStatuses; ++status) {
    if (codes[status] == 0 || codes[status] != code) continue;
    thread_local std::string text;
    text = std::string("tutti: ") + tutti_strerror(status) + ": " + tutti_last_error();
    return text.c_str();
  }
  return nullptr;
}

}  // namespace tutti::interpose
