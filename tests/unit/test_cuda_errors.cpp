// Errors of a call's device work belong to that call (lib/cuda/runtime.hpp,
// ErrorScope): an error noted while one call progresses must not fail
// another. Host-side: note_error needs no device (built with CUDA only).
#include <catch2/catch.hpp>

#include <string>
#include <thread>

#include "tutti_config.h"
#if TUTTI_HAVE_CUDA
#include "cuda/runtime.hpp"

namespace tutti::cuda {
namespace {

TEST_CASE("device-work errors go to the call whose scope is open", "[cuda-host]") {
  const uint64_t process_before = noted_errors();
  NotedErrors first, second;
  {
    ErrorScope outer(first);
    note_error(cudaErrorInvalidValue, "the first call's kernel");
    {
      ErrorScope inner(second);  // another call progressed from inside the first
      note_error(cudaErrorLaunchFailure, "the second call's copy");
    }
    note_error(cudaErrorInvalidValue, "the first call's copy");
    // Another thread's errors are not this call's.
    std::thread([] { note_error(cudaErrorInvalidValue, "elsewhere"); }).join();
  }
  CHECK(first.count == 2);
  CHECK(first.last.find("the first call's copy") != std::string::npos);
  CHECK(second.count == 1);
  CHECK(second.last.find("the second call's copy") != std::string::npos);
  CHECK(noted_errors() == process_before + 1);  // the other thread's, in no scope
  note_error(cudaErrorInvalidValue, "after every scope closed");
  CHECK(noted_errors() == process_before + 2);
  CHECK(first.count == 2);
}

}  // namespace
}  // namespace tutti::cuda
#endif
