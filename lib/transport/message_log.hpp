// TUTTI_MESSAGE_LOG=PREFIX: the UCX transport writes one line per message
// event (a send or receive posted, its completion, an acknowledgement sent,
// a cancel) to PREFIX.<pid>, each with the monotonic clock in µs, so the
// logs of all ranks line up. For finding where a hang across ranks began:
// which message was sent and never received, and whether a whole process
// went quiet (the threaded soak across nodes, docs/RELIABILITY.md). Costs
// one branch per message when unset.
#pragma once

namespace tutti::message_log {

// Whether TUTTI_MESSAGE_LOG is set (read once per process).
bool enabled();
// Appends one line (the timestamp first) and flushes it, so a killed run
// keeps everything up to its last message.
void write(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace tutti::message_log
