#include "tuning/config.hpp"

#include <cctype>
#include <cstdlib>

#include "algos/registry.hpp"
#include "base/status.hpp"
#include "tuning/table.hpp"

namespace tutti {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

double parse_number(const char* name, const char* value, double min) {
  char* end = nullptr;
  const double v = std::strtod(value, &end);
  if (end == value || *end != '\0' || !(v >= min))
    fail(TUTTI_ERR_INVALID_ARGUMENT, name, "='", value, "' is not a number >= ", min);
  return v;
}

bool parse_bool(const char* name, const char* value) {
  const std::string v = value;
  if (v == "1" || v == "yes" || v == "true" || v == "on") return true;
  if (v == "0" || v == "no" || v == "false" || v == "off") return false;
  fail(TUTTI_ERR_INVALID_ARGUMENT, name, "='", value, "': expected 1/0, yes/no, true/false or on/off");
}

DebugFlags parse_debug(const char* value) {
  DebugFlags flags;
  const std::string v = value;
  if (v == "0") return flags;
  if (v == "1" || v == "all") {
    flags.calls = flags.decisions = flags.transport = true;
    return flags;
  }
  size_t start = 0;
  while (start <= v.size()) {
    size_t end = v.find(',', start);
    if (end == std::string::npos) end = v.size();
    const std::string item = v.substr(start, end - start);
    if (item == "calls")
      flags.calls = true;
    else if (item == "decisions")
      flags.decisions = true;
    else if (item == "transport")
      flags.transport = true;
    else
      fail(TUTTI_ERR_INVALID_ARGUMENT, "TUTTI_DEBUG='", value, "': unknown item '", item,
           "' (expected 0, 1, all, or a comma list of calls, decisions, transport)");
    start = end + 1;
  }
  return flags;
}

}  // namespace

std::string algo_env_name(Collective c) {
  std::string name = "TUTTI_ALGO_";
  for (char ch : collective_name(c)) name += static_cast<char>(std::toupper(ch));
  return name;
}

Config Config::from_environment(bool have_ucx) {
  Config cfg;
  cfg.transport = have_ucx ? TransportKind::Ucx : TransportKind::Mpi;
  if (const char* v = env("TUTTI_TRANSPORT")) {
    const std::string t = v;
    if (t == "ucx") {
      if (!have_ucx)
        fail(TUTTI_ERR_UNSUPPORTED, "TUTTI_TRANSPORT=ucx, but this tutti was built without UCX");
      cfg.transport = TransportKind::Ucx;
    } else if (t == "mpi") {
      cfg.transport = TransportKind::Mpi;
    } else {
      fail(TUTTI_ERR_INVALID_ARGUMENT, "TUTTI_TRANSPORT='", v, "': expected ucx or mpi");
    }
  }
  // Open MPI's hint to its ranks (set by the user, or by mpirun on a node
  // it knows to be oversubscribed). Where containers or cgroups hide how
  // many ranks share the cores, it is the only sign; spinning there costs a
  // scheduler tick per wait.
  if (const char* v = env("OMPI_MCA_mpi_yield_when_idle")) {
    const std::string s(v);
    cfg.launcher_yields = s == "1" || s == "true" || s == "yes";
  }
  if (const char* v = env("TUTTI_TIMEOUT")) cfg.timeout_s = parse_number("TUTTI_TIMEOUT", v, 0);
  if (const char* v = env("TUTTI_SPIN")) {
    // An int must hold it (found by fuzzing: 2.7e14 overflowed the cast).
    constexpr double kMaxSpin = 1e9;
    const double spin = parse_number("TUTTI_SPIN", v, 0);
    if (spin > kMaxSpin)
      fail(TUTTI_ERR_INVALID_ARGUMENT, "TUTTI_SPIN='", v, "': at most ", kMaxSpin, " polls");
    cfg.spin_before_yield = static_cast<int>(spin);
    cfg.spin_set = true;
  }
  if (const char* v = env("TUTTI_SLEEP_AFTER")) {
    cfg.sleep_after_us = parse_number("TUTTI_SLEEP_AFTER", v, 0);
    cfg.sleep_set = true;
  }
  for (Collective c : kAllCollectives) {
    const std::string name = algo_env_name(c);
    const char* v = env(name.c_str());
    if (!v) continue;
    if (!algos::find_algorithm(c, v))
      fail(TUTTI_ERR_INVALID_ARGUMENT, name, "='", v, "' is not a ", collective_name(c),
           " algorithm; valid: ", algos::algorithm_names(c));
    cfg.forced[static_cast<int>(c)] = v;
  }
  if (const char* v = env("TUTTI_TUNE")) cfg.tune = v;
  if (const char* v = env("TUTTI_TUNING_FILE")) cfg.tuning_file = v;
  if (const char* v = env("TUTTI_MACHINE")) cfg.machine_file = v;
  if (const char* v = env("TUTTI_TUNING_STRICT"))
    cfg.tuning_strict = parse_bool("TUTTI_TUNING_STRICT", v);
  if (const char* v = env("TUTTI_DEBUG")) cfg.debug = parse_debug(v);
  if (const char* v = env("TUTTI_CHECK")) cfg.check = parse_bool("TUTTI_CHECK", v);
  if (const char* v = env("TUTTI_TRACE")) cfg.trace_prefix = v;
  if (const char* v = env("TUTTI_SHM_BYTES")) {
    try {
      const ValueRange r = parse_range(v);
      if (r.hi != r.lo + 1 || r.lo > (1ull << 40)) throw Error(TUTTI_ERR_INVALID_ARGUMENT, "");
      cfg.shm_bytes = static_cast<long long>(r.lo);
    } catch (const Error&) {
      fail(TUTTI_ERR_INVALID_ARGUMENT, "TUTTI_SHM_BYTES='", v,
           "' is not a size (e.g. 0, 64M; at most 1T)");
    }
  }
  if (const char* v = env("TUTTI_GROUP_FUSE_BYTES")) {
    try {
      const ValueRange r = parse_range(v);
      if (r.hi != r.lo + 1 || r.lo > (1ull << 30)) throw Error(TUTTI_ERR_INVALID_ARGUMENT, "");
      cfg.group_fuse_bytes = static_cast<size_t>(r.lo);
    } catch (const Error&) {
      fail(TUTTI_ERR_INVALID_ARGUMENT, "TUTTI_GROUP_FUSE_BYTES='", v,
           "' is not a size (e.g. 0, 256K; at most 1G)");
    }
  }
  if (const char* v = env("TUTTI_SHM_STREAM")) {
    const std::string mode = v;
    if (mode == "1" || mode == "0") cfg.shm_stream = mode == "1";
    else if (mode != "auto")
      fail(TUTTI_ERR_INVALID_ARGUMENT, "TUTTI_SHM_STREAM='", v, "': expected auto, 1 or 0");
  }
  if (const char* v = env("TUTTI_CMA")) cfg.cma = parse_bool("TUTTI_CMA", v);
  if (const char* v = env("TUTTI_FOLLOW_STATE")) {
    const std::string mode = v;
    if (mode == "1") cfg.follow_state = Config::FollowState::on;
    else if (mode == "0") cfg.follow_state = Config::FollowState::off;
    else if (mode == "alternate") cfg.follow_state = Config::FollowState::alternate;
    else fail(TUTTI_ERR_INVALID_ARGUMENT, "TUTTI_FOLLOW_STATE='", v, "': expected 1, 0 or alternate");
  }
  if (const char* v = env("TUTTI_READS")) {
    const std::string mode = v;
    if (mode == "fast" || mode == "slow") cfg.fast_reads = mode == "fast";
    else if (mode != "auto")
      fail(TUTTI_ERR_INVALID_ARGUMENT, "TUTTI_READS='", v, "': expected auto, fast or slow");
  }
  if (const char* v = env("TUTTI_UCX_PEER_ERRORS"))
    cfg.ucx_peer_errors = parse_bool("TUTTI_UCX_PEER_ERRORS", v);
  return cfg;
}

}  // namespace tutti
