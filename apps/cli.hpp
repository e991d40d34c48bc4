// Small helpers shared by the apps: command-line parsing, formatting and
// the median of timings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tutti::apps {

// "64K" -> 65536, "1M", "2G", plain numbers; throws Error on anything else.
uint64_t parse_bytes(const std::string& text, const std::string& option);
long parse_int(const std::string& text, const std::string& option, long min, long max);
double parse_double(const std::string& text, const std::string& option, double min);
// 65536 -> "64K", 1536 -> "1536"; for tables.
std::string human_bytes(uint64_t bytes);
// The median of `values` (the mean of the middle two for an even count);
// `values` must not be empty.
double median(std::vector<double> values);

// "2026-11-26T10:05:25Z": now, UTC.
std::string utc_now();

}  // namespace tutti::apps
