// Config::from_environment: what tutti reads from the environment, and the
// message for every value it cannot parse (naming the variable and what it
// accepts). The tuning variables are read here as text; lib/tuning_file
// parses them when a communicator is created (tests in test_tuning.cpp).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "algos/registry.hpp"
#include "base/status.hpp"
#include "tuning/config.hpp"

namespace tutti {
namespace {

// Sets (or unsets) environment variables for one test, restoring them after.
class Env {
 public:
  Env() {
    // Start from nothing tutti reads, whatever the caller's environment.
    for (const char* name : {"TUTTI_TRANSPORT", "TUTTI_TIMEOUT", "TUTTI_SPIN", "TUTTI_SLEEP_AFTER", "TUTTI_TUNE",
                             "TUTTI_TUNING_FILE", "TUTTI_TUNING_STRICT", "TUTTI_MACHINE", "TUTTI_DEBUG",
                             "TUTTI_CHECK", "TUTTI_TRACE", "TUTTI_SHM_STREAM", "TUTTI_FOLLOW_STATE",
                             "TUTTI_READS", "TUTTI_UCX_PEER_ERRORS"})
      set(name, std::nullopt);
    for (Collective c : kAllCollectives) set(algo_env_name(c), std::nullopt);
  }
  ~Env() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) setenv(it->first.c_str(), it->second->c_str(), 1);
      else unsetenv(it->first.c_str());
    }
  }
  void set(const std::string& name, const std::optional<std::string>& value) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value) setenv(name.c_str(), value->c_str(), 1);
    else unsetenv(name.c_str());
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

std::string error_of(bool have_ucx = true) {
  try {
    Config::from_environment(have_ucx);
  } catch (const Error& e) {
    CHECK(e.status() == TUTTI_ERR_INVALID_ARGUMENT);
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("config: defaults with nothing set", "[config]") {
  Env env;
  const Config c = Config::from_environment(true);
  CHECK(c.transport == TransportKind::Ucx);
  CHECK(Config::from_environment(false).transport == TransportKind::Mpi);
  CHECK(c.tune.empty());
  CHECK(c.tuning_file.empty());
  CHECK(c.tuning_strict);
  CHECK_FALSE(c.debug.any());
  for (const std::string& f : c.forced) CHECK(f.empty());
}

TEST_CASE("config: the tuning variables", "[config]") {
  Env env;
  env.set("TUTTI_TUNE", "allreduce:0-4K:recursive_doubling,4K-:ring");
  env.set("TUTTI_TUNING_FILE", "/etc/tutti/cluster.toml");
  // Read as text: a communicator parses them (and reports their errors).
  Config c = Config::from_environment(true);
  CHECK(c.tune == "allreduce:0-4K:recursive_doubling,4K-:ring");
  CHECK(c.tuning_file == "/etc/tutti/cluster.toml");
  CHECK(c.tuning_strict);
  for (const char* off : {"0", "no", "false", "off"}) {
    env.set("TUTTI_TUNING_STRICT", off);
    CHECK_FALSE(Config::from_environment(true).tuning_strict);
  }
  for (const char* on : {"1", "yes", "true", "on"}) {
    env.set("TUTTI_TUNING_STRICT", on);
    CHECK(Config::from_environment(true).tuning_strict);
  }
  env.set("TUTTI_TUNING_STRICT", "maybe");
  CHECK(error_of() ==
        "TUTTI_TUNING_STRICT='maybe': expected 1/0, yes/no, true/false or on/off");
  // Empty means unset.
  env.set("TUTTI_TUNING_STRICT", "");
  env.set("TUTTI_TUNE", "");
  c = Config::from_environment(true);
  CHECK(c.tuning_strict);
  CHECK(c.tune.empty());
}

TEST_CASE("config: TUTTI_DEBUG items", "[config]") {
  Env env;
  env.set("TUTTI_DEBUG", "decisions");
  DebugFlags f = Config::from_environment(true).debug;
  CHECK(f.decisions);
  CHECK_FALSE(f.calls);
  CHECK_FALSE(f.transport);
  env.set("TUTTI_DEBUG", "calls,decisions");
  f = Config::from_environment(true).debug;
  CHECK((f.calls && f.decisions && !f.transport));
  for (const char* all : {"1", "all"}) {
    env.set("TUTTI_DEBUG", all);
    f = Config::from_environment(true).debug;
    CHECK((f.calls && f.decisions && f.transport));
  }
  env.set("TUTTI_DEBUG", "0");
  CHECK_FALSE(Config::from_environment(true).debug.any());
  env.set("TUTTI_DEBUG", "decisions,fallbacks");
  CHECK(error_of() ==
        "TUTTI_DEBUG='decisions,fallbacks': unknown item 'fallbacks' (expected 0, 1, all, or a "
        "comma list of calls, decisions, transport)");
}

TEST_CASE("config: TUTTI_ALGO_<COLLECTIVE> forces an algorithm", "[config]") {
  Env env;
  CHECK(algo_env_name(Collective::ReduceScatter) == "TUTTI_ALGO_REDUCE_SCATTER");
  env.set("TUTTI_ALGO_ALLREDUCE", "ring");
  env.set("TUTTI_ALGO_BARRIER", "mpi");
  const Config c = Config::from_environment(true);
  CHECK(c.forced[static_cast<int>(Collective::Allreduce)] == "ring");
  CHECK(c.forced[static_cast<int>(Collective::Barrier)] == "mpi");
  CHECK(c.forced[static_cast<int>(Collective::Bcast)].empty());
  env.set("TUTTI_ALGO_BCAST", "rign");
  CHECK(error_of() == "TUTTI_ALGO_BCAST='rign' is not a bcast algorithm; valid: " +
                          algos::algorithm_names(Collective::Bcast));
}

TEST_CASE("config: transport, timeout and other values", "[config]") {
  Env env;
  env.set("TUTTI_TRANSPORT", "mpi");
  CHECK(Config::from_environment(true).transport == TransportKind::Mpi);
  env.set("TUTTI_TRANSPORT", "tcp");
  CHECK(error_of() == "TUTTI_TRANSPORT='tcp': expected ucx or mpi");
  env.set("TUTTI_TRANSPORT", "ucx");
  try {
    Config::from_environment(false);
    FAIL("TUTTI_TRANSPORT=ucx without UCX accepted");
  } catch (const Error& e) {
    CHECK(e.status() == TUTTI_ERR_UNSUPPORTED);
    CHECK(std::string(e.what()) == "TUTTI_TRANSPORT=ucx, but this tutti was built without UCX");
  }
  env.set("TUTTI_TRANSPORT", std::nullopt);
  env.set("TUTTI_TIMEOUT", "2.5");
  CHECK(Config::from_environment(true).timeout_s == 2.5);
  env.set("TUTTI_TIMEOUT", "soon");
  CHECK(error_of() == "TUTTI_TIMEOUT='soon' is not a number >= 0");
  env.set("TUTTI_TIMEOUT", "-1");
  CHECK(error_of() == "TUTTI_TIMEOUT='-1' is not a number >= 0");
  env.set("TUTTI_TIMEOUT", std::nullopt);
  env.set("TUTTI_SPIN", "10");
  CHECK(Config::from_environment(true).spin_before_yield == 10);
  // Found by fuzzing: a huge value overflowed the conversion to int.
  env.set("TUTTI_SPIN", "266666666666600");
  CHECK(error_of() == "TUTTI_SPIN='266666666666600': at most 1e+09 polls");
  env.set("TUTTI_SPIN", std::nullopt);
  CHECK(Config::from_environment(true).sleep_after_us == 0);
  env.set("TUTTI_SLEEP_AFTER", "1000");
  CHECK(Config::from_environment(true).sleep_after_us == 1000);
  env.set("TUTTI_SLEEP_AFTER", "-5");
  CHECK(error_of() == "TUTTI_SLEEP_AFTER='-5' is not a number >= 0");
  env.set("TUTTI_SLEEP_AFTER", std::nullopt);
  // Open MPI's hint that ranks should yield when idle.
  env.set("OMPI_MCA_mpi_yield_when_idle", "1");
  CHECK(Config::from_environment(true).launcher_yields);
  env.set("OMPI_MCA_mpi_yield_when_idle", "0");
  CHECK_FALSE(Config::from_environment(true).launcher_yields);
  env.set("OMPI_MCA_mpi_yield_when_idle", std::nullopt);
  CHECK_FALSE(Config::from_environment(true).launcher_yields);
  env.set("TUTTI_CHECK", "sometimes");
  CHECK(error_of() == "TUTTI_CHECK='sometimes': expected 1/0, yes/no, true/false or on/off");
  env.set("TUTTI_CHECK", std::nullopt);
  CHECK_FALSE(Config::from_environment(true).shm_stream.has_value());
  env.set("TUTTI_SHM_STREAM", "auto");
  CHECK_FALSE(Config::from_environment(true).shm_stream.has_value());
  env.set("TUTTI_SHM_STREAM", "1");
  CHECK(Config::from_environment(true).shm_stream == true);
  env.set("TUTTI_SHM_STREAM", "0");
  CHECK(Config::from_environment(true).shm_stream == false);
  env.set("TUTTI_SHM_STREAM", "fast");
  CHECK(error_of() == "TUTTI_SHM_STREAM='fast': expected auto, 1 or 0");
  env.set("TUTTI_SHM_STREAM", std::nullopt);
  using Follow = Config::FollowState;
  CHECK(Config::from_environment(true).follow_state == Follow::off);
  env.set("TUTTI_FOLLOW_STATE", "1");
  CHECK(Config::from_environment(true).follow_state == Follow::on);
  env.set("TUTTI_FOLLOW_STATE", "alternate");
  CHECK(Config::from_environment(true).follow_state == Follow::alternate);
  env.set("TUTTI_FOLLOW_STATE", "0");
  CHECK(Config::from_environment(true).follow_state == Follow::off);
  env.set("TUTTI_FOLLOW_STATE", "sometimes");
  CHECK(error_of() == "TUTTI_FOLLOW_STATE='sometimes': expected 1, 0 or alternate");
  env.set("TUTTI_FOLLOW_STATE", std::nullopt);
  CHECK_FALSE(Config::from_environment(true).fast_reads.has_value());
  env.set("TUTTI_READS", "auto");
  CHECK_FALSE(Config::from_environment(true).fast_reads.has_value());
  env.set("TUTTI_READS", "fast");
  CHECK(Config::from_environment(true).fast_reads == true);
  env.set("TUTTI_READS", "slow");
  CHECK(Config::from_environment(true).fast_reads == false);
  env.set("TUTTI_READS", "1");
  CHECK(error_of() == "TUTTI_READS='1': expected auto, fast or slow");
}

}  // namespace tutti
