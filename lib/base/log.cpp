#include "base/log.hpp"

#include <cstdio>
#include <string>

namespace tutti {

void log_line(int rank, std::string_view message) {
  // One fprintf per line keeps lines of different ranks from interleaving.
  std::string line = "tutti[" + std::to_string(rank) + "]: ";
  line += message;
  line += '\n';
  std::fputs(line.c_str(), stderr);
}

}  // namespace tutti
