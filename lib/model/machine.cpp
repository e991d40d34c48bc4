#include "model/machine.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/status.hpp"

namespace tutti::model {
namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

}  // namespace

Machine parse_machine(const std::string& text, const std::string& origin) {
  Machine m;
  std::istringstream in(text);
  std::string line, section;
  for (int number = 1; std::getline(in, line); ++number) {
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    const std::string where = str(origin, ":", number, ": ");
    if (line.front() == '[') {
      if (line.back() != ']') fail(TUTTI_ERR_INVALID_ARGUMENT, where, "unclosed section '", line, "'");
      section = trim(line.substr(1, line.size() - 2));
      if (section != "intra" && section != "inter" && section != "compute" && section != "protocol")
        fail(TUTTI_ERR_INVALID_ARGUMENT, where, "unknown section [", section,
             "] (known: intra, inter, compute, protocol)");
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string::npos)
      fail(TUTTI_ERR_INVALID_ARGUMENT, where, "expected 'key = value', got '", line, "'");
    const std::string key = trim(line.substr(0, eq)), raw = trim(line.substr(eq + 1));
    char* end = nullptr;
    const double v = std::strtod(raw.c_str(), &end);
    if (raw.empty() || *end != '\0' || !std::isfinite(v) || v < 0)
      fail(TUTTI_ERR_INVALID_ARGUMENT, where, key, " = '", raw, "': expected a number >= 0");
    const std::string name = section + "." + key;
    auto positive = [&] {
      if (v <= 0) fail(TUTTI_ERR_INVALID_ARGUMENT, where, name, " must be > 0");
      return v;
    };
    if (name == "intra.alpha_us") m.intra.alpha_us = v;
    else if (name == "intra.beta_gbps") m.intra.bytes_per_us = positive() * 1e3;
    else if (name == "inter.alpha_us") m.inter.alpha_us = v;
    else if (name == "inter.beta_gbps") m.inter.bytes_per_us = positive() * 1e3;
    else if (name == "intra.rndv_alpha_us") m.intra.rndv_alpha_us = v;
    else if (name == "intra.rndv_beta_gbps") m.intra.rndv_bytes_per_us = positive() * 1e3;
    else if (name == "inter.rndv_alpha_us") m.inter.rndv_alpha_us = v;
    else if (name == "inter.rndv_beta_gbps") m.inter.rndv_bytes_per_us = positive() * 1e3;
    else if (name == "intra.rndv_short_alpha_us") m.intra.rndv_short_alpha_us = v;
    else if (name == "intra.rndv_short_beta_gbps") m.intra.rndv_short_bytes_per_us = positive() * 1e3;
    else if (name == "inter.rndv_short_alpha_us") m.inter.rndv_short_alpha_us = v;
    else if (name == "inter.rndv_short_beta_gbps") m.inter.rndv_short_bytes_per_us = positive() * 1e3;
    else if (name == "intra.rndv_cached_alpha_us") m.intra.rndv_cached_alpha_us = v;
    else if (name == "intra.rndv_cached_beta_gbps") m.intra.rndv_cached_bytes_per_us = positive() * 1e3;
    else if (name == "intra.eager_bytes") m.intra.eager_bytes = v;
    else if (name == "intra.written_send_factor") m.intra.written_factor = positive();
    else if (name == "inter.written_send_factor") m.inter.written_factor = positive();
    else if (name == "inter.eager_bytes") m.inter.eager_bytes = v;
    else if (name == "intra.send_eager_bytes") m.intra.send_eager_bytes = v;
    else if (name == "inter.send_eager_bytes") m.inter.send_eager_bytes = v;
    else if (name == "intra.inject_us") m.intra.inject_us = v;
    else if (name == "intra.flag_us") m.flag_us = v;
    else if (name == "intra.peer_read_us") m.peer_read_us = v;
    else if (name == "intra.peer_read_gbps") m.peer_read_bytes_per_us = positive() * 1e3;
    else if (name == "intra.peer_copy_gbps") m.peer_copy_bytes_per_us = positive() * 1e3;
    else if (name == "intra.peer_write_gbps") m.peer_write_bytes_per_us = positive() * 1e3;
    else if (name == "intra.peer_write_max_bytes") m.peer_write_max_bytes = v;
    else if (name == "protocol.direct_call_us") m.direct_call_us = v;
    else if (name == "inter.inject_us") m.inter.inject_us = v;
    else if (name == "inter.nics") m.nics_per_node = static_cast<int>(std::max(1.0, std::round(positive())));
    else if (name == "compute.reduce_gbps") m.reduce_bytes_per_us = positive() * 1e3;
    else if (name == "compute.copy_gbps") m.copy_bytes_per_us = positive() * 1e3;
    else if (name == "compute.cores_per_node") m.cores_per_node = static_cast<int>(std::round(v));
    else if (name == "compute.host_cores") m.host_cores = static_cast<int>(std::round(v));
    else if (name == "compute.cache_bytes") m.cache_bytes = v;
    else if (name == "compute.reduce_cached_gbps") m.reduce_cached_bytes_per_us = positive() * 1e3;
    else if (name == "compute.copy_cached_gbps") m.copy_cached_bytes_per_us = positive() * 1e3;
    else if (name == "protocol.eager_bytes") m.eager_bytes = v;
    else if (name == "protocol.call_us") m.call_us = v;
    else
      fail(TUTTI_ERR_INVALID_ARGUMENT, where, "unknown key '", name,
           "' (known: intra.alpha_us, intra.beta_gbps, intra.rndv_alpha_us, intra.rndv_beta_gbps, "
           "intra.rndv_short_alpha_us, intra.rndv_short_beta_gbps, intra.rndv_cached_alpha_us, "
           "intra.rndv_cached_beta_gbps, intra.eager_bytes, intra.send_eager_bytes, "
           "intra.written_send_factor, inter.written_send_factor, "
           "intra.inject_us, intra.flag_us, intra.peer_read_us, intra.peer_read_gbps, "
           "intra.peer_copy_gbps, intra.peer_write_gbps, intra.peer_write_max_bytes, inter.alpha_us, "
           "inter.beta_gbps, "
           "inter.rndv_alpha_us, inter.rndv_beta_gbps, inter.rndv_short_alpha_us, "
           "inter.rndv_short_beta_gbps, inter.eager_bytes, inter.send_eager_bytes, inter.inject_us, "
           "inter.nics, compute.reduce_gbps, compute.copy_gbps, compute.cores_per_node, "
           "compute.host_cores, compute.cache_bytes, compute.reduce_cached_gbps, compute.copy_cached_gbps, "
           "protocol.eager_bytes, "
           "protocol.call_us, protocol.direct_call_us)");
  }
  return m;
}

Machine load_machine(const std::string& path) {
  std::ifstream f(path);
  if (!f) fail(TUTTI_ERR_INVALID_ARGUMENT, "machine description '", path, "' cannot be read");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_machine(ss.str(), path);
}

}  // namespace tutti::model
