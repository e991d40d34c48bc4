// Fuzzes tutti's environment parsing: the input's lines become the values
// of TUTTI_TUNE, TUTTI_ALGO_<COLL>, TUTTI_DEBUG, TUTTI_TIMEOUT, ... in turn;
// then the configuration is read and the TUTTI_TUNE rules loaded, as
// tutti_comm_create does. Rejection (tutti::Error) is fine; a crash, a
// sanitizer report or any other exception is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "base/status.hpp"
#include "tuning/config.hpp"
#include "tuning/file.hpp"

namespace {
constexpr const char* kVariables[] = {
    "TUTTI_TUNE",         "TUTTI_ALGO_ALLREDUCE", "TUTTI_ALGO_REDUCE_SCATTER", "TUTTI_DEBUG",
    "TUTTI_TIMEOUT",      "TUTTI_SPIN",           "TUTTI_TRANSPORT",           "TUTTI_SHM_BYTES",
    "TUTTI_TUNING_STRICT", "TUTTI_CHECK",         "TUTTI_HOST_ISA",            "TUTTI_UCX_PEER_ERRORS",
    "TUTTI_SLEEP_AFTER",
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (const char* v : kVariables) unsetenv(v);
  unsetenv("TUTTI_TUNING_FILE");
  const std::string input(reinterpret_cast<const char*>(data), size);
  size_t start = 0;
  for (const char* v : kVariables) {
    if (start > input.size()) break;
    size_t end = input.find('\n', start);
    if (end == std::string::npos) end = input.size();
    // setenv stops at a NUL byte, as the environment would.
    setenv(v, input.substr(start, end - start).c_str(), 1);
    start = end + 1;
  }
  try {
    const tutti::Config cfg = tutti::Config::from_environment(true);
    for (int ranks : {1, 3, 64})
      (void)tutti::load_user_tuning(cfg.tune, cfg.tuning_file, cfg.tuning_strict,
                                    tutti::JobShape{ranks, 1, ranks});
  } catch (const tutti::Error&) {
  }
  return 0;
}
