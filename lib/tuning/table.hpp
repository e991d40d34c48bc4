// Tuning tables: ordered rules that pick an algorithm for a call from its
// collective, message size, rank count, node count, memory type and
// (optionally) datatype. First match wins. Layers, highest priority first:
// TUTTI_ALGO_<COLL> (handled by the dispatcher), TUTTI_TUNE, the per-cluster
// file, the built-in defaults.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/coll_args.hpp"

namespace tutti {

// A half-open range [lo, hi) of sizes or counts; hi = max means unbounded.
struct ValueRange {
  uint64_t lo = 0;
  uint64_t hi = std::numeric_limits<uint64_t>::max();
  bool contains(uint64_t v) const { return v >= lo && v < hi; }
  bool overlaps(const ValueRange& o) const { return lo < o.hi && o.lo < hi; }
  bool unbounded() const { return hi == std::numeric_limits<uint64_t>::max(); }
  bool operator==(const ValueRange&) const = default;
};

// "0-8K", "8K-1M", "1M-", "4" (exactly 4); K/M/G are powers of 1024.
// Throws Error(TUTTI_ERR_INVALID_ARGUMENT) on anything else.
ValueRange parse_range(const std::string& text);
std::string format_range(const ValueRange& r);
// "64K" for 65536 where exact, else the plain number.
std::string format_size(uint64_t bytes);

struct TuningRule {
  Collective coll = Collective::Allreduce;
  ValueRange bytes, ranks, nodes;
  std::optional<MemoryType> memory;
  std::optional<Datatype> dtype;
  // cores=shared: only where some node's ranks outnumber its CPUs
  // (Topology::shared_cores); cores=own: only where none do.
  std::optional<bool> shared_cores;
  // reads=fast: only where reading a peer's buffer in place (cross-memory
  // attach) beat the shared segment's two copies when the communicator was
  // created (node/read_probe.hpp); reads=slow: only where it lost.
  std::optional<bool> fast_reads;
  std::string algorithm;
  AlgoParams params;
  // Where TUTTI_FOLLOW_STATE is on: the algorithm a blocking call may run
  // instead, whichever the probes find faster in the machine's current
  // speed state (api/state_choice.hpp); "" for none.
  std::string alternative;
  AlgoParams alternative_params;
  std::string origin;  // "built-in", "file.toml:12", "TUTTI_TUNE 'allreduce:0-4K:ring'"
};

// "allreduce bytes=0-4K ranks=4- memory=host -> ring chunk_bytes=64K": what
// the rule says, without its origin (the same rule read from two places
// prints the same).
std::string rule_to_string(const TuningRule& rule);

// The values of a rule's "cores" key: "shared" (true) and "own" (false).
const char* cores_name(bool shared);
std::optional<bool> parse_cores(std::string_view text);
// The values of a rule's "reads" key: "fast" (true) and "slow" (false).
const char* reads_name(bool fast);
std::optional<bool> parse_reads(std::string_view text);

struct CallShape;
bool rule_matches(const TuningRule& rule, const CallShape& shape);

struct CallShape {
  Collective coll;
  uint64_t bytes;
  int nranks, nnodes;
  MemoryType memory;
  Datatype dtype;
  bool shared_cores = false;  // Topology::shared_cores
  bool fast_reads = true;     // Dispatcher::fast_reads (the creation's probe)
};

class TuningTable {
 public:
  TuningTable() = default;
  explicit TuningTable(std::vector<TuningRule> rules) : rules_(std::move(rules)) {}
  // The first matching rule, or null.
  const TuningRule* match(const CallShape& shape) const;
  // Every matching rule, in order: the first is the choice, the rest its
  // fallbacks should it refuse the call.
  std::vector<const TuningRule*> matches(const CallShape& shape) const;
  const std::vector<TuningRule>& rules() const { return rules_; }
  bool empty() const { return rules_.empty(); }

 private:
  std::vector<TuningRule> rules_;
};

// FNV-1a over the rules' canonical text (origins excluded): two tables that
// decide every call alike hash alike, wherever they were read from.
uint64_t tuning_hash(const TuningTable& table);
std::string format_hash(uint64_t hash);  // "0x" + 16 hex digits

// tutti's defaults, measured on the machines we have (docs/PERFORMANCE.md).
const TuningTable& builtin_tuning();

}  // namespace tutti
