// Debug logging to stderr, prefixed with the rank: "tutti[3]: ...".
#pragma once

#include <string_view>

namespace tutti {

void log_line(int rank, std::string_view message);

}  // namespace tutti
