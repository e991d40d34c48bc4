// Status codes, the exception used inside builders/config parsing, and the
// per-thread "last error" detail returned by tutti_last_error().
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "tutti/tutti.h"

namespace tutti {

using Status = tutti_status_t;

// Concatenates anything streamable: str("rank ", r, " of ", n).
template <typename... Args>
std::string str(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

// Thrown by code off the progress path (argument checks, schedule builders,
// configuration parsing) and turned into a status code at the C boundary.
class Error : public std::runtime_error {
 public:
  Error(Status status, std::string message)
      : std::runtime_error(std::move(message)), status_(status) {}
  Status status() const { return status_; }

 private:
  Status status_;
};

template <typename... Args>
[[noreturn]] void fail(Status status, Args&&... args) {
  throw Error(status, str(std::forward<Args>(args)...));
}

const char* status_string(int status);

// Records `message` as this thread's last error and returns `status`, so that
// error paths read `return set_last_error(TUTTI_ERR_..., "...")`.
Status set_last_error(Status status, std::string message);
void clear_last_error();
const char* last_error();

}  // namespace tutti
