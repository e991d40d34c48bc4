// Small command-line helpers shared by the apps.
#pragma once

#include <cstdint>
#include <string>

namespace tutti::apps {

// "64K" -> 65536, "1M", "2G", plain numbers; throws Error on anything else.
uint64_t parse_bytes(const std::string& text, const std::string& option);
long parse_int(const std::string& text, const std::string& option, long min, long max);
double parse_double(const std::string& text, const std::string& option, double min);
// 65536 -> "64K", 1536 -> "1536"; for tables.
std::string human_bytes(uint64_t bytes);

}  // namespace tutti::apps
