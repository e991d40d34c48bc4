#include "cli.hpp"

#include <algorithm>
#include <cstdlib>
#include <ctime>

#include "base/status.hpp"
#include "tuning/table.hpp"

namespace tutti::apps {

uint64_t parse_bytes(const std::string& text, const std::string& option) {
  try {
    const ValueRange r = parse_range(text);  // a single size parses as [v, v+1)
    if (r.hi != r.lo + 1) throw Error(TUTTI_ERR_INVALID_ARGUMENT, "a range");
    return r.lo;
  } catch (const Error&) {
    fail(TUTTI_ERR_INVALID_ARGUMENT, option, ": '", text, "' is not a size (e.g. 8, 64K, 1M, 2G)");
  }
}

long parse_int(const std::string& text, const std::string& option, long min, long max) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < min || v > max)
    fail(TUTTI_ERR_INVALID_ARGUMENT, option, ": '", text, "' is not an integer in [", min, ", ",
         max, "]");
  return v;
}

double parse_double(const std::string& text, const std::string& option, double min) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v >= min))
    fail(TUTTI_ERR_INVALID_ARGUMENT, option, ": '", text, "' is not a number >= ", min);
  return v;
}

std::string human_bytes(uint64_t bytes) { return format_size(bytes); }

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace tutti::apps
