#include "base/status.hpp"

namespace tutti {
namespace {
thread_local std::string t_last_error;
}

const char* status_string(int status) {
  switch (status) {
    case TUTTI_SUCCESS: return "success";
    case TUTTI_ERR_INVALID_ARGUMENT: return "invalid argument";
    case TUTTI_ERR_UNSUPPORTED: return "unsupported operation";
    case TUTTI_ERR_TIMEOUT: return "timed out";
    case TUTTI_ERR_TRANSPORT: return "transport error";
    case TUTTI_ERR_OUT_OF_MEMORY: return "out of memory";
    case TUTTI_ERR_MISMATCH: return "mismatch between ranks";
    case TUTTI_ERR_INTERNAL: return "internal error";
    default: return "unknown status code";
  }
}

Status set_last_error(Status status, std::string message) {
  t_last_error = std::move(message);
  return status;
}

void clear_last_error() { t_last_error.clear(); }

const char* last_error() { return t_last_error.c_str(); }

}  // namespace tutti
