#include "transport/message_log.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace tutti::message_log {
namespace {

// Opened on first use; left open to the process's end (a line is flushed
// as it is written).
FILE* file() {
  static FILE* const f = [] {
    const char* prefix = std::getenv("TUTTI_MESSAGE_LOG");
    if (!prefix || !*prefix) return static_cast<FILE*>(nullptr);
    const std::string path = std::string(prefix) + "." + std::to_string(getpid());
    FILE* opened = std::fopen(path.c_str(), "w");
    if (!opened) std::fprintf(stderr, "tutti: TUTTI_MESSAGE_LOG: cannot write %s\n", path.c_str());
    return opened;
  }();
  return f;
}

std::mutex g_mutex;  // the threads of a process share its file

}  // namespace

bool enabled() {
  static const bool on = file() != nullptr;
  return on;
}

void write(const char* format, ...) {
  FILE* f = file();
  if (!f) return;
  const long long us = std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count();
  const std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(f, "%lld ", us);
  va_list args;
  va_start(args, format);
  std::vfprintf(f, format, args);
  va_end(args);
  std::fputc('\n', f);
  std::fflush(f);
}

}  // namespace tutti::message_log
