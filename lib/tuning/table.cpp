#include "tuning/table.hpp"

#include <cctype>

#include "base/status.hpp"

namespace tutti {
namespace {

constexpr uint64_t K = 1024, M = K * 1024, G = M * 1024;

uint64_t parse_size(const std::string& text, const std::string& whole) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])))
    fail(TUTTI_ERR_INVALID_ARGUMENT, "bad range '", whole, "': '", text, "' is not a number");
  size_t pos = 0;
  uint64_t v = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    const uint64_t digit = static_cast<uint64_t>(text[pos] - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - digit) / 10)
      fail(TUTTI_ERR_INVALID_ARGUMENT, "bad range '", whole, "': number too large");
    v = v * 10 + digit;
    ++pos;
  }
  uint64_t unit = 1;
  if (pos < text.size()) {
    switch (std::toupper(static_cast<unsigned char>(text[pos]))) {
      case 'K': unit = K; break;
      case 'M': unit = M; break;
      case 'G': unit = G; break;
      default:
        fail(TUTTI_ERR_INVALID_ARGUMENT, "bad range '", whole, "': unknown suffix in '", text,
             "' (K, M or G)");
    }
    ++pos;
    if (pos < text.size() && (text[pos] == 'B' || text[pos] == 'b')) ++pos;  // "8KB"
  }
  if (pos != text.size())
    fail(TUTTI_ERR_INVALID_ARGUMENT, "bad range '", whole, "': trailing '", text.substr(pos), "'");
  if (v > std::numeric_limits<uint64_t>::max() / unit)
    fail(TUTTI_ERR_INVALID_ARGUMENT, "bad range '", whole, "': number too large");
  return v * unit;
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

}  // namespace

ValueRange parse_range(const std::string& raw) {
  const std::string text = trim(raw);
  const size_t dash = text.find('-');
  if (dash == std::string::npos) {
    const uint64_t v = parse_size(text, raw);
    if (v == std::numeric_limits<uint64_t>::max())
      fail(TUTTI_ERR_INVALID_ARGUMENT, "bad range '", raw, "': number too large");
    return {v, v + 1};
  }
  ValueRange r;
  const std::string lo = trim(text.substr(0, dash)), hi = trim(text.substr(dash + 1));
  r.lo = lo.empty() ? 0 : parse_size(lo, raw);
  if (!hi.empty()) r.hi = parse_size(hi, raw);
  if (r.hi <= r.lo)
    fail(TUTTI_ERR_INVALID_ARGUMENT, "bad range '", raw, "': the upper end must exceed the lower");
  return r;
}

std::string format_size(uint64_t v) {
  if (v >= G && v % G == 0) return str(v / G, "G");
  if (v >= M && v % M == 0) return str(v / M, "M");
  if (v >= K && v % K == 0) return str(v / K, "K");
  return str(v);
}

std::string format_range(const ValueRange& r) {
  if (!r.unbounded() && r.hi == r.lo + 1) return format_size(r.lo);
  return str(format_size(r.lo), "-", r.unbounded() ? "" : format_size(r.hi));
}

const char* cores_name(bool shared) { return shared ? "shared" : "own"; }

std::optional<bool> parse_cores(std::string_view text) {
  if (text == "shared") return true;
  if (text == "own") return false;
  return std::nullopt;
}

const char* reads_name(bool fast) { return fast ? "fast" : "slow"; }

std::optional<bool> parse_reads(std::string_view text) {
  if (text == "fast") return true;
  if (text == "slow") return false;
  return std::nullopt;
}

std::string rule_to_string(const TuningRule& r) {
  std::string out = str(collective_name(r.coll), " bytes=", format_range(r.bytes));
  const ValueRange any;
  if (!(r.ranks == any)) out += str(" ranks=", format_range(r.ranks));
  if (!(r.nodes == any)) out += str(" nodes=", format_range(r.nodes));
  if (r.memory) out += str(" memory=", memory_type_name(*r.memory));
  if (r.dtype) out += str(" dtype=", datatype_name(*r.dtype));
  if (r.shared_cores) out += str(" cores=", cores_name(*r.shared_cores));
  if (r.fast_reads) out += str(" reads=", reads_name(*r.fast_reads));
  out += str(" -> ", r.algorithm);
  if (r.params.chunk_bytes) out += str(" chunk_bytes=", format_size(r.params.chunk_bytes));
  if (r.params.radix) out += str(" radix=", r.params.radix);
  if (!r.alternative.empty()) {
    out += str(" or ", r.alternative);
    if (r.alternative_params.chunk_bytes)
      out += str(" chunk_bytes=", format_size(r.alternative_params.chunk_bytes));
    out += " (TUTTI_FOLLOW_STATE)";
  }
  return out;
}

uint64_t tuning_hash(const TuningTable& table) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto add = [&h](std::string_view text) {
    for (unsigned char c : text) {
      h ^= c;
      h *= 0x100000001b3ull;
    }
  };
  for (const TuningRule& r : table.rules()) {
    add(rule_to_string(r));
    add("\n");
  }
  return h;
}

std::string format_hash(uint64_t hash) {
  static const char* const kHex = "0123456789abcdef";
  std::string out = "0x";
  for (int shift = 60; shift >= 0; shift -= 4) out += kHex[(hash >> shift) & 15];
  return out;
}

bool rule_matches(const TuningRule& rule, const CallShape& s) {
  return rule.coll == s.coll && rule.bytes.contains(s.bytes) &&
         rule.ranks.contains(static_cast<uint64_t>(s.nranks)) &&
         rule.nodes.contains(static_cast<uint64_t>(s.nnodes)) &&
         (!rule.memory || *rule.memory == s.memory) && (!rule.dtype || *rule.dtype == s.dtype) &&
         (!rule.shared_cores || *rule.shared_cores == s.shared_cores) &&
         (!rule.fast_reads || *rule.fast_reads == s.fast_reads);
}

const TuningRule* TuningTable::match(const CallShape& s) const {
  for (const TuningRule& rule : rules_)
    if (rule_matches(rule, s)) return &rule;
  return nullptr;
}

std::vector<const TuningRule*> TuningTable::matches(const CallShape& s) const {
  std::vector<const TuningRule*> out;
  for (const TuningRule& rule : rules_)
    if (rule_matches(rule, s)) out.push_back(&rule);
  return out;
}

const TuningTable& builtin_tuning() {
  static const TuningTable table = [] {
    std::vector<TuningRule> rules;
    auto add = [&](Collective c, uint64_t lo, uint64_t hi, const char* algo) -> TuningRule& {
      TuningRule r;
      r.coll = c;
      r.bytes = {lo, hi};
      r.algorithm = algo;
      r.origin = "built-in";
      rules.push_back(r);
      return rules.back();
    };
    // Rules for jobs on one node, where the shared segment lets each rank
    // read and reduce its peers' data in place (one copy, no messages).
    auto add_one_node = [&](Collective c, uint64_t lo, uint64_t hi, const char* algo,
                            size_t chunk_bytes) -> TuningRule& {
      TuningRule& r = add(c, lo, hi, algo);
      r.nodes = {1, 2};
      r.ranks.lo = 2;  // a lone rank has no shared segment
      r.params.chunk_bytes = chunk_bytes;
      return r;
    };
    constexpr uint64_t kAny = std::numeric_limits<uint64_t>::max();
    // One node, from tutti-tune runs on 2 and 4 ranks (docs/tune-run,
    // docs/PERFORMANCE.md): the shared-memory algorithms win by 1.3-3x from
    // 64 KiB up (allreduce 16 MiB on 2 ranks: 2.6 ms against 3.7 ms for the
    // best point-to-point schedule), and the small allreduce is fastest
    // through the segment too. Where the segment cannot hold a call, or the
    // job spans nodes, the algorithm refuses and the general rules below
    // decide. Since small calls carry their data in the flag lines, reduce
    // through the segment is level with the tree at 8-64 B and 1.2-7x
    // faster above, bcast 2.6-5x faster from 512 B, allgather 1.3-2x
    // faster than recursive doubling up to 4 KiB (tutti-bench, 2 ranks,
    // 2026-11-24), and the barrier is one flag round
    // (0.19 us against dissemination's 0.66 on 2 ranks). Since blocking
    // calls run their schedule directly (Comm::run_blocking), bcast below
    // 512 B is faster through the segment too: 0.39-0.70 of Open MPI's
    // time against the tree's 0.51-0.97 (2 ranks, alternating jobs).
    // Allreduce of 512 KiB-4 MiB on 2 ranks goes point to point (recursive
    // halving; UCX sends its large messages by rendezvous, here over the
    // cma transport, where the kernel copies from the peer's buffer in
    // place): a little faster than the segment when the two cores are
    // close (1 MiB: 116-144 us against 152-158), and 2x faster when they
    // are far apart (466-500 us against 1050, Open MPI 480-800), where
    // every write into the segment first takes the lines back from the
    // far core (alternating jobs, 2026-11-24, docs/PERFORMANCE.md "The slow
    // state, second pass"). Below 512 KiB the segment has been faster since
    // its slots move from call to call (SharedPort::take_slide): 16-256 KiB
    // in 0.18-0.66 of Open MPI's time against 0.31-0.93 (8 alternating
    // jobs, cores close; not measured far apart). On 4 ranks the segment
    // wins at every size (16 KiB: 0.3 of Open MPI's time against 0.8),
    // and from 4 MiB on 2 ranks (0.5-0.7 against 0.8-0.9).
    // allreduce and reduce by reading: each rank reduces a slice read from
    // its peers' buffers, then the slices are read where they are needed
    // (cma_common.hpp). Allreduce, 3 alternating jobs, 2026-11-26, far
    // state (docs/perf/one-node-cma-2026-11-26.txt): 2 ranks 64 KiB-16 MiB
    // 0.63-0.69 of Open MPI's time against the segment's 0.86-1.43 and
    // recursive halving's 0.75-0.82 (1 MiB); 4 ranks from 256 KiB 0.66-0.77
    // against 0.80-1.48. Reduce: on 4 ranks it wins at 256 KiB (0.91/1.36
    // against 1.21/1.95); on 2 ranks (the root reads the other's vector and
    // reduces it, reduce_cma.cpp) 16-256 KiB 1.10-1.23 of Open MPI's time
    // against the segment's 1.43-1.85, which is ahead again from 1 MiB
    // (0.80-0.99 against 1.0-1.2); chunks of 16 or 64 KiB were slower.
    // Where the probe at creation found peer reads slower than the segment
    // (node/read_probe.hpp), the segment keeps 2 ranks' mid sizes: the
    // reads=fast rules below give way to the shm rules further down. On
    // 2026-11-28's VM (a 64 KiB read 7-8 us, through the segment 3-4), 3
    // alternating jobs per collective, both methods: the segment took
    // 0.26-0.95 of Open MPI's time at 16-64 KiB against cma's 0.92-1.77.
    // From 256 KiB the segment's copies then lost where the cores are far
    // apart (bcast 256 KiB-1 MiB 2.2-2.5 against cma's 1.1-1.2; close:
    // 0.5-0.6 against 1.0-1.2: docs/perf/read-probe-2026-11-28.txt), but
    // only because the probe that decides how slots are written missed the
    // far-apart state. Since it compares the two ways directly
    // (node/slot_writes.hpp, 2026-11-29), the segment keeps 2 ranks' large
    // sizes too where reads are slow: 256 KiB-16 MiB, 3 alternating jobs per collective
    // and both methods, both speed states (docs/perf/large-2ranks-2026-11-29.txt),
    // the segment took 0.35-0.96 of Open MPI's time where cma took
    // 0.75-1.39 (allreduce, scatter, gather, allgather, alltoall, reduce;
    // the worst cells scatter 256-512 KiB with a barrier, 1.17-1.36
    // either way); bcast below.
    // On 3 ranks and more the cma rules hold only where every rank has a
    // core of its own: with 4 ranks on 2 cores the segment, its slot
    // writes probed both ways, took 0.36-0.93 of Open MPI's time at 64
    // KiB-1 MiB for allreduce, reduce, allgather, alltoall and gather
    // against cma's 0.71-2.13 (2 alternating jobs per collective, both
    // methods, 2026-11-29: docs/perf/np4-cma-shm-2026-11-29.txt); scatter
    // below. Nothing was measured with a core per rank: there the rules
    // stay as measured on 2026-11-26 (before the slot-write probe worked).
    // From 4 MiB (8 MiB since the evening, below) 2 ranks' allreduce takes
    // the segment either way: 2026-11-30, 3-4 alternating jobs, reads fast,
    // barrier / back to back, 4-16 MiB 0.48-0.59 / 0.50-0.68 of Open MPI's
    // time (256 KiB chunks) against cma's 0.71-0.88 / 0.66-0.70; at 256
    // KiB-2 MiB cma stays ahead (0.67-0.92 against 0.79-1.20)
    // (docs/perf/allreduce-large-2ranks-2026-11-30.txt).
    add_one_node(Collective::Allreduce, 8 * M, kAny, "shm", 256 * K).ranks = {2, 3};
    // 1-8 MiB as a reduce-scatter then an allgather through the segment
    // (hierarchical_shm, as 4 ranks sharing cores do): 2026-11-30, 9
    // alternating jobs in two sets, barrier / back to back, 0.54-0.72 /
    // 0.45-0.61 of Open MPI's time against 0.83-0.92 / 0.73-0.83, one
    // far-state job 0.70-0.74 back to back against 0.77-0.90; at 512 KiB it
    // lost (0.80 / 1.00 against 0.68), at 4 MiB level with a barrier, from
    // 8 MiB behind. Against recursive_halving (the rule below where no rank
    // can read a peer) 0.50-0.70 of Open MPI's time at 1-2 MiB against
    // 0.85-1.43 (docs/perf/allreduce-large-2ranks-2026-11-30.txt). In the
    // evening (after the streaming copies) 4 MiB too: 14 alternating jobs in
    // both orders, 0.66-1.06 of Open MPI's time against shm's 0.86-1.11,
    // 0.79-0.97 of its time; 8 MiB level (0.97-1.08), 16 MiB 0.94
    // (docs/perf/allreduce-4mib-2ranks-2026-11-30.txt).
    add_one_node(Collective::Allreduce, 1 * M, 8 * M, "hierarchical_shm", 0).ranks = {2, 3};
    add_one_node(Collective::Allreduce, 64 * K, kAny, "cma", 0).ranks = {2, 3};
    rules.back().fast_reads = true;
    add_one_node(Collective::Allreduce, 256 * K, kAny, "shm", 256 * K).ranks = {2, 3};
    rules.back().fast_reads = false;
    add_one_node(Collective::Allreduce, 256 * K, kAny, "cma", 0).ranks.lo = 3;
    rules.back().shared_cores = false;
    add_one_node(Collective::Reduce, 256 * K, 1 * M, "cma", 0).ranks.lo = 3;
    rules.back().shared_cores = false;
    add_one_node(Collective::Allreduce, 512 * K, 4 * M, "recursive_halving", 0).ranks = {2, 3};
    // Single copy (cross-memory attach: each rank reads its peers' buffers
    // in place, as Open MPI's own large transfers here do) against the
    // segment's two copies: 3 alternating jobs per collective, 2026-11-26
    // (docs/perf/one-node-cma-2026-11-26.txt), time / Open MPI's, both
    // methods. 2 ranks: allgather and alltoall from 16 KiB 0.70-1.04
    // against shm's 0.84-2.15; bcast 16 KiB-1 MiB 0.91-1.01 against
    // 1.17-2.68, where from 4 MiB shm's pipelined copies win (0.70-0.93
    // against 1.0); scatter 64 KiB-1 MiB and gather 64-256 KiB 0.93-1.04
    // against 1.25-2.38. On 4 ranks (2 cores) the segment keeps small
    // calls and every bcast: cma wins allgather from 256 KiB, alltoall,
    // scatter and gather from 64 KiB (gather up to 4 MiB). Where the
    // kernel forbids the reads, cma refuses and the rules below decide.
    // Which wins depends on the machine: on 2026-11-28's VM the segment
    // beat cma at 16 KiB-1 MiB for bcast, scatter and gather on 2 ranks
    // in both speed states (0.37-0.9 of Open MPI's time against 1.0-1.2,
    // docs/perf/one-node-mid-2026-11-28.txt), the opposite of 2026-11-26's
    // VM above. So the mid sizes of 2 ranks follow the probe at creation
    // (reads=fast, above): where reads are slow, the segment keeps them.
    // 2026-11-30's VM, whose probe found reads fast in most jobs (a 64 KiB
    // trip 7.0-7.1 us by reading, 8.6-9.1 through the segment; 2.6 in one
    // job of six), measured the rules again after the segment's pipelined
    // chunks and moving slots (2026-11-29), 3-4 alternating jobs per
    // collective, both methods, 16 KiB-4 MiB (docs/perf/reads-fast-2026-11-30.txt):
    // - bcast, reduce, gather and scatter through the segment at every
    //   size: 0.42-0.96 of Open MPI's time (reduce 64 KiB 1.10) against
    //   cma's 0.84-1.23. Their reads=fast cma rules are gone (scatter's
    //   from 1 MiB too since the afternoon: below).
    // - allgather and alltoall: the segment at 16-32 KiB (0.43-0.81
    //   against 0.90-1.17) and from 512 KiB (0.62-0.92 against 0.95-1.06);
    //   cma at 64-256 KiB (0.95-1.05 against the segment's 0.91-1.44).
    // - allreduce: cma from 64 KiB, as before (1-4 MiB 0.72-0.90 against
    //   0.84-1.25); from 1 MiB the segment since the afternoon (below).
    // 2 ranks' bcast runs through the segment in chunks of about a quarter
    // of the vector, so that the other rank copies one chunk out while the
    // root copies the next in: one chunk of
    // 256 KiB-1 MiB (2 copies one after the other) took 0.70-1.58 of Open
    // MPI's time with a barrier per call, cores far apart, where cma took
    // 1.03-1.24 (docs/perf/large-2ranks-2026-11-29.txt). 3 alternating jobs,
    // far state, barrier / back to back: 64-128 KiB in 32 KiB chunks
    // 0.59-0.78 / 0.42-0.67 against one chunk's 0.83-1.24 / 0.46-0.75;
    // 256 KiB-512 KiB in 64 KiB chunks 0.81-1.10 / 0.74-0.75, 1-2 MiB in
    // 128 KiB chunks 0.83-1.09 / 0.59-0.81, against cma's 1.02-1.19 /
    // 1.02-1.28; from 4 MiB 1 MiB chunks stay ahead (0.31-0.77 / 0.35-0.80).
    // Smaller chunks cost more rounds (8 KiB: 1.1-2.6). On 4 ranks sharing
    // 2 cores every round costs a switch: 32-64 KiB chunks lost there
    // (docs/perf/bcast-chunks-2026-11-29.txt).
    // 2026-11-30 (after the segment's streaming slot writes and the root's
    // copy changes), 6 alternating jobs, close state, barrier / back to back:
    // 512 KiB-2 MiB in one chunk (as much as the segment holds) 0.61-0.71 /
    // 0.32-0.68 against the quarter chunks' 0.72-0.86 / 0.71-1.00; a far-state
    // job alike (0.52-0.57 with a barrier); at 256 KiB and at 4 MiB with a
    // barrier one chunk lost (1.21 against 0.89, 0.60 against 0.51), so those
    // keep their rules. Against the old rules (scripts/compare-builds.sh, 6
    // rounds): 512 KiB-2 MiB 0.42-0.78 of their time back to back, 0.77-0.98
    // with a barrier (docs/perf/bcast-one-chunk-2026-11-30.txt).
    // 2026-12-01, cores far apart (the whole morning): one chunk took
    // 1.32-1.47 of Open MPI's time with a barrier at 512 KiB-2 MiB (the two
    // copies one after the other, each from memory), 128 KiB chunks
    // 0.65-0.90 (back to back 0.67-0.80 against one chunk's 0.67-0.80; 64
    // KiB alike); close, 128 KiB chunks 0.68-0.99 / 0.77-0.79 against one
    // chunk's 0.50-0.71 / 0.32-0.78. 128 KiB chunks stay below Open MPI in
    // both states, also on 3 ranks (docs/perf/large-far-2026-12-01.txt).
    // Choosing the chunk by state would need the ranks to agree on it
    // (unlike the slot writes, slot_writes.hpp): not done yet.
    add_one_node(Collective::Bcast, 32 * K, 256 * K, "shm", 32 * K).ranks = {2, 3};
    add_one_node(Collective::Bcast, 256 * K, 512 * K, "shm", 64 * K).ranks = {2, 3};
    add_one_node(Collective::Bcast, 512 * K, 4 * M, "shm", 128 * K).ranks = {2, 3};
    add_one_node(Collective::Allgather, 64 * K, 512 * K, "cma", 0).ranks = {2, 3};
    rules.back().fast_reads = true;
    add_one_node(Collective::Allgather, 256 * K, kAny, "cma", 0).ranks.lo = 3;
    rules.back().shared_cores = false;
    add_one_node(Collective::Alltoall, 64 * K, 512 * K, "cma", 0).ranks = {2, 3};
    rules.back().fast_reads = true;
    add_one_node(Collective::Alltoall, 64 * K, kAny, "cma", 0).ranks.lo = 3;
    rules.back().shared_cores = false;
    // scatter's cma root copies its own block while the others read
    // (cma_common.hpp; before 2026-11-29 it copied it first): 3 alternating jobs, both
    // methods, 1-16 MiB 0.63-0.82 of Open MPI's time against the segment's
    // 0.61-1.03 with reads slow; 16-512 KiB the segment, whose cma floor is
    // 7-8 us here (docs/perf/scatter-own-copy-2026-11-29.txt). On 4 ranks
    // sharing 2 cores the segment wins 16-256 KiB (0.29-0.77 against
    // 0.61-1.12) and is steadier above (0.67-1.04 against 0.59-1.08).
    // Through the segment 2 ranks' scatter runs in 64 KiB chunks: the root
    // copies the next chunk in while the other copies the last one out
    // (and the root its own block's chunk). 6 alternating jobs, far state,
    // barrier: 256 KiB 0.69, 512 KiB 0.94 against 256 KiB chunks' 1.14, 1.50;
    // back to back level (0.53-0.81 against 0.52-0.89). On 4 ranks sharing
    // 2 cores 64 KiB chunks lost from 512 KiB (1.04-1.42 against 0.58-1.08):
    // docs/perf/scatter-own-copy-2026-11-29.txt.
    // From 1 MiB 2 ranks' scatter went back to the segment on 2026-11-30, in
    // one chunk (as much as the segment holds): 5 alternating jobs, barrier /
    // back to back, 1-4 MiB 0.49-0.59 / 0.43-0.48 of Open MPI's time against
    // cma's 0.79-0.81 / 0.77-0.88, 8-32 MiB 0.60-0.66 / 0.59-0.68 against
    // 0.66-0.69 / 0.70-0.77; a far-state job 0.43-0.58 with a barrier. At
    // 512 KiB 64 KiB chunks stay ahead (0.56 against 0.59-0.79)
    // (docs/perf/scatter-one-chunk-2026-11-30.txt).
    add_one_node(Collective::Scatter, 1 * M, kAny, "shm", 4 * M).ranks = {2, 3};
    add_one_node(Collective::Scatter, 32 * K, kAny, "shm", 64 * K).ranks = {2, 3};
    add_one_node(Collective::Scatter, 64 * K, kAny, "cma", 0).ranks.lo = 3;
    rules.back().shared_cores = false;
    add_one_node(Collective::Scatter, 64 * K, kAny, "shm", 256 * K).shared_cores = true;
    add_one_node(Collective::Gather, 64 * K, 4 * M, "cma", 0).ranks.lo = 3;
    rules.back().shared_cores = false;
    // 2 ranks' gather from 1 MiB in one chunk (as much as the segment
    // holds; the general rule's are 256 KiB): 2026-11-30, 4 alternating
    // jobs, barrier / back to back, 2-4 MiB 0.45-0.49 of Open MPI's time
    // against 0.66-0.75, 1 MiB and 8-16 MiB level or ahead (0.40-0.56
    // against 0.44-0.70). allgather and alltoall in one chunk lost from
    // 4-8 MiB (docs/perf/gather-one-chunk-2026-11-30.txt).
    add_one_node(Collective::Gather, 1 * M, kAny, "shm", 4 * M).ranks = {2, 3};
    // 2 ranks' allgather of 1-8 MiB in 1 MiB chunks (the general rule's are
    // 256 KiB): 2026-11-30, 3-4 alternating jobs, cores close, barrier /
    // back to back, 1-4 MiB 0.66-0.72 / 0.65-0.71 of Open MPI's time against
    // 0.75-0.91 / 1.03-1.08; from 8 MiB mixed; 64 KiB chunks lost everywhere
    // (docs/perf/allgather-chunks-2026-11-30.txt).
    add_one_node(Collective::Allgather, 1 * M, 8 * M, "shm", 1 * M).ranks = {2, 3};
    // From 512 KiB the faster way for 2 ranks' allgather and alltoall
    // follows the machine's state: with the cores close the segment ran at
    // 0.62-0.92 of Open MPI's time against cma's 0.95-1.06, far apart at
    // 1.02-1.48 against 1.00-1.09 (three copies against two, each from
    // memory; 2026-12-01, docs/perf/large-far-2026-12-01.txt). Where
    // TUTTI_FOLLOW_STATE is on, the ranks probe both and agree
    // (api/state_choice.hpp). Not allgather's 512 KiB-1 MiB: there the
    // probes took cma in some jobs with the cores close, the median job at
    // 0.92 of Open MPI's time against the segment's 0.63
    // (docs/perf/follow-state-2026-12-06.txt).
    rules.back().alternative = "cma";
    add_one_node(Collective::Allgather, 8 * M, kAny, "shm", 256 * K).ranks = {2, 3};
    rules.back().alternative = "cma";
    add_one_node(Collective::Alltoall, 512 * K, kAny, "shm", 256 * K).ranks = {2, 3};
    rules.back().alternative = "cma";
    // Where ranks share cores, 4 or more of them, the mid-size allreduce
    // goes through the segment as a reduce-scatter then an allgather
    // (hierarchical_shm on one node): each rank reduces 1/P of the vector
    // instead of all of it. 4 ranks on 2 cores, 4 alternating jobs per
    // algorithm, both methods, 128 KiB-2 MiB: 0.44-0.68 of Open MPI's time
    // against shm's 0.56-1.09 (1 MiB: 248-406 us against 461-484); level
    // at 64 KiB and 4 MiB; on 3 ranks ahead only at 1 MiB
    // (docs/perf/np4-allreduce-hierarchical-2026-11-30.txt).
    add_one_node(Collective::Allreduce, 128 * K, 4 * M, "hierarchical_shm", 0).ranks.lo = 4;
    rules.back().shared_cores = true;
    add_one_node(Collective::Allreduce, 0, kAny, "shm", 256 * K);
    // 2 ranks' reduce of 64-512 KiB through the segment in two chunks:
    // the other rank copies the second in while the root reduces the first
    // (since 2026-11-30 the root reduces its own vector from its input, so
    // the two halves of the work are level). 4 alternating jobs a variant,
    // cores close: with a barrier 64/128/256 KiB 0.89/1.03/0.95 of Open
    // MPI's time against one chunk's 0.97/1.06/1.06, back to back
    // 0.80-0.90 against 0.83-0.92 (docs/perf/reduce-halves-2026-11-30.txt).
    add_one_node(Collective::Reduce, 64 * K, 128 * K, "shm", 32 * K).ranks = {2, 3};
    add_one_node(Collective::Reduce, 128 * K, 256 * K, "shm", 64 * K).ranks = {2, 3};
    add_one_node(Collective::Reduce, 256 * K, 512 * K, "shm", 128 * K).ranks = {2, 3};
    // From 1 MiB in one chunk (as much as the segment holds): back to back
    // a call's copy overlaps the last call's reduction (the chunks alternate
    // parities). 2026-11-30, 4 alternating jobs, cores close: 1-2 MiB
    // 0.34-0.35 of Open MPI's time back to back against 256 KiB chunks'
    // 0.66-0.70, with a barrier level (0.68-0.74 against 0.71-0.73); at
    // 512 KiB with a barrier one chunk lost (0.64 against 0.45). Against the
    // old rules (5 alternating rounds) 1-2 MiB 0.64-0.83 of their time
    // either way, but 4-8 MiB with a barrier 1.28-1.43, so from 4 MiB the
    // 256 KiB chunks stay (docs/perf/reduce-one-chunk-2026-11-30.txt).
    add_one_node(Collective::Reduce, 1 * M, 4 * M, "shm", 4 * M).ranks = {2, 3};
    add_one_node(Collective::Reduce, 0, kAny, "shm", 256 * K);
    add_one_node(Collective::Bcast, 0, kAny, "shm", 1 * M);
    add_one_node(Collective::Allgather, 0, kAny, "shm", 256 * K);
    // Since the segment needs no closing synchronisation and small calls
    // run directly, reduce_scatter and alltoall through it are faster
    // than the point-to-point schedules at every size on 2 and 4 ranks
    // (alternating jobs, 2026-11-24: reduce_scatter 64 B-4 KiB at 0.5-0.9
    // of Open MPI's time against 0.8-2.0 for recursive halving; alltoall
    // 64 B-4 KiB at 0.5-0.9 against 0.9-2.0 for Bruck and pairwise, and
    // 128 KiB-1 MiB at 0.5-1.0 against 0.6-1.2). Since the slots move from
    // call to call, that includes alltoall of 8-128 KiB on 2 ranks, which
    // used to go pairwise: 0.19-0.59 of Open MPI's time against pairwise's
    // 0.36-1.20 (3 alternating jobs with the cores close, 2026-11-24).
    add_one_node(Collective::ReduceScatter, 0, kAny, "shm", 256 * K);
    // alltoall below 1 KiB per rank: the blocks ride in the flag lines with
    // their signals ("lines") instead of slots and a flag round ("shm"):
    // 8-512 B on 2 ranks 0.62-0.86 of Open MPI's time against shm's
    // 0.90-1.40, on 4 ranks (2 cores) 16-256 B 0.78-0.88 against 0.83-0.95;
    // from 1 KiB shm is level or ahead (4 alternating jobs, 2026-11-28:
    // docs/perf/alltoall-lines-2026-11-28.txt).
    add_one_node(Collective::Alltoall, 0, 1 * K, "lines", 0);
    add_one_node(Collective::Alltoall, 0, kAny, "shm", 256 * K);
    // alltoallv (its rules see no size: the counts differ between ranks):
    // blocks of up to 1.5 KiB through the flag lines, up to 128 KiB through
    // slots, larger ones read in place by their receivers (without peer
    // reads: as "pairwise" sends them). 8-512 B: 0.64-0.82 of Open MPI's
    // time against pairwise's 1.2-3.6 (2 and 4 ranks, alternating jobs,
    // 2026-11-28: docs/perf/alltoallv-shm-2026-11-28.txt); 8-256 KiB per
    // rank through the slots 0.22-0.90 (docs/perf/alltoallv-slots-2026-11-29.txt).
    add_one_node(Collective::Alltoallv, 0, kAny, "shm", 0);
    // Where ranks share cores, a barrier through one leader: after the
    // all-to-all flags of "shm" every rank is released at once, and a small
    // call right after it waited for a descheduled root (4 ranks on 2 cores,
    // libtutti-mpi's barrier, then bcast or scatter of 8-64 B: 6-7.5 us
    // against 0.5-0.6 through the leader and Open MPI's 0.5-0.6; the
    // barrier alone alike: docs/perf/interpose-barrier-2026-11-27.txt).
    add_one_node(Collective::Barrier, 0, kAny, "leader_shm", 0).shared_cores = true;
    add_one_node(Collective::Barrier, 0, kAny, "shm", 0);
    // gather and scatter through the segment: 2 ranks, 2026-11-26, one
    // tutti-bench --compare-mpi job per algorithm, root 1: gather "shm"
    // 0.45-0.53 us at 8-128 B and 1.1-1.3x Open MPI's speed from 32 KiB to
    // 8 MiB, where the tree (UCX messages) took 0.76-0.80 us and 2.4-5.6 us
    // at 512 B-8 KiB (0.26-0.45x). scatter "shm" wins up to 8 KiB alike,
    // and loses from 128 KiB (0.67-0.70x: the root's P-1 copies in against
    // single-copy transfers), where the flat rules keep the tree and linear.
    add_one_node(Collective::Gather, 0, kAny, "shm", 256 * K);
    add_one_node(Collective::Scatter, 0, 64 * K, "shm", 256 * K);
    // Jobs across nodes: the node-aware allreduces. On the emulated cluster
    // (tests/cluster, TCP between nodes; tutti-bench --compare-mpi,
    // 2026-11-25, docs/PERFORMANCE.md "Across nodes") "leader" took 0.52-0.99
    // of Open MPI's time at 8 B-8 MiB on 2 nodes x 2 ranks, where the flat
    // default took 0.62-1.6; on 4 x 2 it loses from 128 KiB (its one leader
    // per node carries every byte), where "hierarchical" spreads the traffic
    // between nodes over all local ranks (4 x 2, 512 KiB-8 MiB: 1.0-1.3x
    // Open MPI's time, the flat default 1.0-1.4x: still behind there).
    // With each node's shared segment (jobs across nodes have one per node
    // since 2026-11-26) the same two designs run their phases inside a node
    // through it instead of messages: 4 x 2, one job per algorithm,
    // tutti-bench --compare-mpi, us: 8 B leader_shm 93 against leader's 205
    // and hierarchical_shm's 150; 32 KiB 146 against 528 and 195; 256 KiB
    // hierarchical_shm 875 against hierarchical's 2815 and leader_shm's
    // 947; 2 MiB 8840 against 33298 (Open MPI 6800-9000). 2 x 2: 32 KiB
    // hierarchical_shm 41-53 against leader's 47-49 and hierarchical's
    // 81-114. Without a segment (TUTTI_SHM_BYTES=0) they refuse and the
    // rules below decide. hierarchical_shm's chunks of 128 KiB instead of the
    // default 256 KiB (2026-11-26, TUTTI_TUNE, 3 interleaved jobs on 2 x 2,
    // both methods, tutti / Open MPI medians): 1-16 MiB 0.70-0.74 (barrier)
    // and 0.63-0.92 (back to back) against 0.76-1.05 and 1.02-1.46; 64 and
    // 32 KiB chunks 0.68-0.82 / 0.60-0.90 and 0.84-1.46 / 0.84-1.24. On 4 x 2
    // (2 jobs, 8 ranks on 2 cores) 4 MiB 0.95 / 0.86 against 1.03 / 1.23.
    // Raw: docs/perf/cluster-allreduce-chunks-2026-11-26.txt. On 3 nodes
    // and more the default 256 KiB: 4 x 2, 2026-11-28, 3 rounds of jobs
    // alternating 128 / 256 / 512 KiB, median tutti / Open MPI time at
    // 256 KiB-16 MiB: barrier 0.88-1.31 / 0.68-0.95 / 0.67-1.02, back to back
    // 0.90-1.26 / 0.66-0.82 / 0.69-1.06 (docs/perf/cluster-4x2-allreduce-
    // chunks-2026-11-28.txt).
    add(Collective::Allreduce, 0, 64 * K, "leader_shm").nodes = {2, kAny};
    add(Collective::Allreduce, 64 * K, 256 * K, "hierarchical_shm").nodes = {2, 3};
    rules.back().params.chunk_bytes = 128 * K;
    // From 256 KiB on two nodes its phases overlapped chunk by chunk (128
    // KiB chunks). 2 x 2, 2026-11-28, 3 rounds of jobs alternating the two,
    // median tutti / Open MPI time, barrier / back to back: 384 KiB
    // 0.88 / 0.63 against 0.92 / 0.88 in turn, 512 KiB 0.91 / 0.86 against
    // 0.98 / 0.92, 2 MiB 0.99 / 1.07 against 1.17 / 1.17, 8 MiB 0.70 / 0.68
    // against 0.85 / 0.82; 192 KiB level (0.87 / 1.07, 0.86 / 1.05); 128
    // KiB (one chunk: more rounds, nothing to overlap) 0.84 / 1.19 against
    // 0.70 / 0.71 (docs/perf/cluster-2x2-allreduce-overlap-2026-11-28.txt).
    // On 3 and 4 nodes it runs recursive halving and doubling between the
    // lanes, but did not beat hierarchical_shm there: 4 x 2 (8 ranks on 2
    // cores), 3 rounds, median tutti / Open MPI barrier / back to back, 256
    // KiB 0.85 / 0.79 against 0.73 / 0.74, 1 MiB 1.17 / 0.94 against 0.97 /
    // 1.11, 4 MiB 1.02 / 1.04 against 1.05 / 1.18, 16 MiB 1.00 / 1.05
    // against 1.13 / 1.09 (docs/perf/cluster-4x2-allreduce-overlap-2026-11-28.txt).
    // Its chunks of 256 KiB, not the 128 KiB it takes on two nodes by
    // itself: 2 x 2, 2026-12-06, 5 rounds alternating the two, tutti's
    // median time lower at every size from 256 KiB to 16 MiB in both
    // methods (barrier / back to back, 512 KiB 537 / 567 us against 752 /
    // 784, 1 MiB 1175 / 1296 against 1614 / 1444, 16 MiB 18.8 / 20.7 ms
    // against 27.7 / 26.0; tutti / Open MPI 0.59-0.98 against 0.69-1.18).
    // Raw: docs/perf/cluster-2x2-allreduce-overlap-chunks-2026-12-06.txt.
    add(Collective::Allreduce, 256 * K, kAny, "hierarchical_shm_overlap").nodes = {2, 3};
    rules.back().params.chunk_bytes = 256 * K;
    add(Collective::Allreduce, 64 * K, kAny, "hierarchical_shm").nodes = {3, kAny};
    add(Collective::Allreduce, 0, 128 * K, "leader").nodes = {2, kAny};
    add(Collective::Allreduce, 128 * K, kAny, "leader").nodes = {2, 3};
    add(Collective::Allreduce, 128 * K, kAny, "hierarchical").nodes = {3, kAny};
    // bcast and reduce through one leader per node: only N-1 messages cross
    // between nodes whatever the root and the rank layout (the flat
    // binomial tree crosses up to P-1 times with a root other than 0, and
    // scatter_allgather sends every rank's block across). 2 x 2, root 3,
    // 2026-11-25, one job per algorithm (tutti-bench --compare-mpi): reduce
    // "leader" 0.2-0.7 of Open MPI's time from 8 B to 16 MiB, against
    // 0.55-1.0 for the tree and 0.5-2.1 for recursive halving; bcast
    // "leader" matches the tree at root 0 (the same edges there) and
    // scatter_allgather took 1.3-5x Open MPI's time.
    // allgather through one leader per node from 3 nodes: 4 x 2, 2026-11-26,
    // one job per algorithm (tutti-bench --compare-mpi, 8 ranks on 2 cores):
    // "leader" 116-134 us at 32 B-8 KiB and 234-572 us at 32-128 KiB, against
    // 168-267 and 314-923 for recursive doubling, 206-265 and 289-1134 for
    // Bruck (Open MPI 124-224 and 224-770). On 2 nodes recursive doubling
    // already crosses between nodes once (27 against 29 us at 32 B on 2 x 2)
    // and keeps the flat rules.
    // "leader_shm" (the same through each node's segment) measured level
    // with both in single jobs, but medians of interleaved jobs (2026-11-26,
    // 3 on 2 x 2, 2 on 4 x 2, both methods, tutti / Open MPI; raw in
    // docs/perf/cluster-allgather-algorithms-2026-11-26.txt) put it ahead:
    // 2 x 2 16 B-16 KiB 0.46-0.62 (barrier) and 0.38-0.73 (back to back)
    // against recursive doubling's 0.86-0.98 and 0.99-1.66 and
    // hierarchical_shm's 0.66-0.73 and 0.92-1.00 (level at 64 KiB, behind
    // from 256 KiB but for 1 MiB back to back); 4 x 2 64 B-64 KiB 0.61-0.95
    // and 0.61-1.09 against leader's 0.66-0.96 and 0.71-1.20, behind
    // hierarchical_shm from 256 KiB. From 4 KiB "hierarchical_shm"
    // (every rank a lane between nodes, the segment inside them) beat the
    // flat ones at every size: 2 x 2, one job each, us: 4 KiB 26 against
    // recursive doubling's 39, 1 MiB 1121 against 2123 (ring 1315), 16 MiB
    // 18.9 ms against 31.5 (28.6); 4 x 2 64 KiB 398 against 663 (456), 16
    // MiB 47 ms against 155 (142).
    add(Collective::Allgather, 0, 64 * K, "leader_shm").nodes = {2, 3};
    add(Collective::Allgather, 0, 256 * K, "leader_shm").nodes = {3, kAny};
    add(Collective::Allgather, 4 * K, kAny, "hierarchical_shm").nodes = {2, kAny};
    add(Collective::Allgather, 0, 128 * K, "leader").nodes = {3, kAny};
    // reduce_scatter through one leader per node: 2 x 2, 2026-11-26, one job
    // per algorithm (tutti-bench --compare-mpi): "leader" 19-42 us at 32 B-32
    // KiB and 123 at 128 KiB, against 30-67 and 149 for recursive halving
    // (Open MPI 29-47 and 138). On 4 x 2 (8 ranks on 2 cores, noisy) it
    // wins at 128 B-2 KiB and 32-128 KiB and loses at 32 B and 8 KiB.
    // Through each node's segment ("leader_shm", 2026-11-26, one job per
    // algorithm, us, Open MPI's in brackets): 2 x 2 25-41 (35-44) at 32 B-16
    // KiB against leader's 34-72 (46-56); 4 x 2 139-229 (195-248) against
    // 155-293 (202-406), 128 KiB 553 (647) against 1178 (1181). At 1 MiB on
    // 2 x 2 it lost then (one job: 1538 against 1052). Larger since:
    // 2026-12-07, 3 alternating jobs per shape, tutti / Open MPI medians,
    // barrier / back to back, 256 KiB-16 MiB, against the ring that ran
    // there: 2 x 2 0.24-0.50 / 0.16-0.35 against 0.33-0.54 / 0.32-0.51
    // (recursive halving 0.42-0.51 / 0.34-0.58); on 3 x 2 and 4 x 2 ahead or
    // level with a barrier (0.33-0.45 against 0.33-0.54) but behind back to
    // back up to 4 MiB (0.28-0.50 against 0.24-0.43); at 16 MiB level or
    // ahead in both (0.28-0.45 against 0.36-0.97). From 8 MiB, so that the
    // 16 MiB of a rank count that does not divide it (16 MiB - 16 B on 6
    // ranks) is in. Raw: docs/perf/cluster-reduce-scatter-large-2026-12-07.txt.
    add(Collective::ReduceScatter, 0, 256 * K, "leader_shm").nodes = {2, kAny};
    add(Collective::ReduceScatter, 256 * K, kAny, "leader_shm").nodes = {2, 3};
    add(Collective::ReduceScatter, 8 * M, kAny, "leader_shm").nodes = {3, kAny};
    add(Collective::ReduceScatter, 0, 256 * K, "leader").nodes = {2, kAny};
    // barrier through one leader per node: one round crosses between nodes
    // per doubling of the node count, not per doubling of the rank count.
    // 2026-11-26, tutti-bench --compare-mpi: 2 x 2 15 us against 34 for
    // dissemination (Open MPI 26-27); 4 x 2 119 against 149 (Open MPI
    // 165-189).
    // With each node's segment, barrier, bcast and reduce run their phase
    // inside a node as flags and slots instead of messages ("leader_shm";
    // 2026-11-26, one tutti-bench --compare-mpi --check job per algorithm,
    // us, Open MPI's in the same job in brackets): barrier 4 x 2 129 (135)
    // against leader's 241 (292), 2 x 2 24 (37) against 16 (27); bcast 2 x 2
    // 5-14 (13-20) at 8 B-4 KiB against 10-26 (13-27), 255 (151) at 256 KiB
    // against 473 (267), 4 x 2 2 MiB 12.3 ms (18.9) against 17.9 (24.8);
    // reduce root 1, 4 x 2 75-106 (128-171) at 8-512 B against 120-137
    // (167-179), 438 (1458) at 256 KiB against 887 (1228). Without a segment
    // they refuse and "leader" runs.
    add(Collective::Barrier, 0, kAny, "leader_shm").nodes = {2, kAny};
    // Mid-size bcasts in turn, between the leaders first (a pipelined binary
    // tree), then inside each node ("binary_leader_shm"), where leader_shm
    // synchronises every node for each slot it forwards: 2026-12-07, 2-3
    // sets of 3 alternating jobs, both methods, the geometric mean of its
    // tutti / Open MPI ratio over leader_shm's: 2 x 2 1 MiB 0.76, 2 MiB
    // 0.80 (512 KiB 1.00, 4 MiB 0.93); 4 x 2 512 KiB 0.64, 1 MiB 0.82 (256
    // KiB 0.96, 2 MiB 1.04, 4 MiB 1.16). Raw:
    // docs/perf/cluster-bcast-binary-leader-2026-12-07.txt.
    add(Collective::Bcast, 1 * M, 4 * M, "binary_leader_shm").nodes = {2, 3};
    add(Collective::Bcast, 512 * K, 2 * M, "binary_leader_shm").nodes = {4, kAny};
    add(Collective::Bcast, 0, kAny, "leader_shm").nodes = {2, kAny};
    // Small reduces on two nodes: "leader" (messages inside the node too).
    // 2 x 2, 2026-11-28, 10 rounds of jobs alternating the two, root 1,
    // tutti / Open MPI, barrier / back to back: 8 B-8 KiB "leader" 0.68-0.82
    // / 0.49-1.09 against leader_shm's 0.71-0.78 / 0.74-1.56 (back to back a
    // node's ranks wait for its leader's flag acknowledgements, and ranks
    // that share the cores wait for a core); root 0 alike (0.56-0.72 /
    // 0.82-1.09 against 0.58-0.72 / 1.18-1.54). Level at 16 KiB, leader_shm
    // ahead from 32 KiB (0.65 / 0.56 against 0.85 / 1.07). Raw:
    // docs/perf/cluster-2x2-reduce-small-2026-11-28.txt. The same from 4
    // nodes: 4 x 2, 2026-11-30, 4 rounds alternating the two, root 3,
    // 8 B-8 KiB: "leader" 0.54-0.92 / 0.47-1.09 (one 2.92 at 4 KiB) against
    // leader_shm's 0.51-0.82 / 1.02-6.49; root 0, 3 rounds: 0.76-0.89 /
    // 0.19-0.98 against 0.75-0.91 / 1.07-7.01. Raw:
    // docs/perf/cluster-4x2-reduce-small-2026-11-30.txt.
    add(Collective::Reduce, 0, 16 * K, "leader").nodes = {2, kAny};
    add(Collective::Reduce, 0, kAny, "leader_shm").nodes = {2, kAny};
    add(Collective::Barrier, 0, kAny, "leader").nodes = {2, kAny};
    // scatter and gather across nodes: 2026-11-26, each algorithm forced,
    // root 1, 3 interleaved jobs on 2 x 2 and 2 on 4 x 2, each with a barrier
    // per call and back to back, tutti / Open MPI medians. scatter
    // "leader_shm" on 2 x 2 at 64 B-256 KiB: 0.32-0.68 (barrier) and
    // 0.30-0.88 (back to back), against "tree"'s 0.68-0.84 and 0.76-1.57; at
    // 2 MiB it lost (1.97 / 1.03) to "linear" (0.66 / 1.06). On 4 x 2 (8
    // ranks on 2 cores) back to back it lost everywhere (1.6-7.7: a leader's
    // signal waits for its flag line, whose reader waits for a core), so the
    // rule holds for 2 nodes. gather "linear" on 2 x 2 at 64 B-256 KiB:
    // 0.52-0.96 and 0.38-1.01, against "tree"'s 0.60-1.63 and 0.84-2.26; on
    // 4 x 2 0.47-0.92 and 0.20-1.02 (tree 0.31-0.99 and 0.14-2.69); at 2 MiB
    // 0.42-0.63 with a barrier, 1.27-1.61 back to back (tree 1.38-1.90).
    add(Collective::Scatter, 0, 512 * K, "leader_shm").nodes = {2, 3};
    // From 4 nodes "leader_shm" from 8 KiB: 4 x 2, 2026-11-29, two sets
    // of jobs alternating it with "tree" (3 and 5 rounds, root 0), tutti /
    // Open MPI medians of the 5, barrier / back to back, 8-512 KiB:
    // 0.71-1.21 / 0.61-1.73 against tree's 0.90-2.60 / 1.15-3.58 (512 KiB:
    // linear's 0.93-1.10 / 2.15-2.23). Below 8 KiB tree stays: back to
    // back 1.35-5.35 against 6.5-10.2 (with a barrier leader_shm's
    // 1.08-1.23 against 1.33-1.63). Raw:
    // docs/perf/cluster-4x2-scatter-bcast-2026-11-29.txt.
    add(Collective::Scatter, 8 * K, 1 * M, "leader_shm").nodes = {4, kAny};
    add(Collective::Gather, 0, kAny, "linear").nodes = {2, kAny};
    // alltoall through each node's segment, every rank a lane between nodes
    // ("hierarchical_shm"): 2026-11-26, each algorithm forced, 3 interleaved
    // jobs on 2 x 2 and 2 on 4 x 2, both methods, tutti / Open MPI medians,
    // 64 B-32 KiB: 2 x 2 0.75-0.90 (barrier) and 0.60-1.11 (back to back)
    // against the best flat one's 0.93-1.30 and 0.65-1.47; 4 x 2 0.57-0.99 and
    // 0.59-0.86 against 0.77-1.26 and 0.62-1.36. Uneven nodes: it refuses.
    // Up to 256 KiB on 3 nodes and more too: 2026-12-06, 5 rounds on 3 x 2
    // and 8 on 4 x 2, barrier / back to back, 128 KiB 0.71 / 0.76 and 0.81 /
    // 0.73 against pairwise's 1.22 / 1.07 on 4 x 2 and "mpi"'s 1.05-1.08 /
    // 1.10-1.49 (2026-11-30, 3 rounds on 4 x 2: 0.96 / 1.10 against
    // pairwise's 1.38 / 0.92). At 256 KiB nothing leads there (below).
    // Raw: docs/perf/cluster-alltoall-mid-2026-12-06.txt.
    add(Collective::Alltoall, 0, 256 * K, "hierarchical_shm").nodes = {2, kAny};
    // On two nodes between 128 and 512 KiB: 2 x 2, 2026-11-28, 15 rounds of
    // jobs alternating the algorithms (so a median survives this machine's
    // noise: Open MPI's own time moved 2x between jobs), tutti / Open MPI,
    // barrier / back to back: 128 KiB "linear" 0.88-1.01 / 1.19-1.22 against
    // pairwise's 1.37-1.39 / 1.23-1.25 and hierarchical_shm's 1.11-1.22 /
    // 1.29-1.72; 256 KiB hierarchical_shm 0.58-0.59 / 0.72-0.77 against
    // pairwise's 1.02-1.13 / 1.03-1.04 and linear's 0.67 / 0.97-0.99. On 4 x
    // 2 the segment's copies lost at 256 KiB (above): two nodes only (up
    // to 256 KiB the rule above holds on every node count). Raw:
    // docs/perf/cluster-2x2-alltoall-mid-2026-11-28.txt. On 2026-11-29
    // "linear" at 64-128 KiB took 0.6-1.5 ms in many jobs (16-32 KiB
    // messages over UCX's TCP; Open MPI 0.2-0.3 ms), where hierarchical_shm
    // stayed at 0.2-0.4 ms; 128 KiB follows it since
    // (docs/perf/cluster-2x2-alltoall-linear-stalls-2026-11-29.txt).
    add(Collective::Alltoall, 256 * K, 512 * K, "hierarchical_shm").nodes = {2, 3};
    // Large alltoall across nodes goes to the MPI library: every tutti
    // schedule measured behind it there, also over the MPI transport
    // (TUTTI_TRANSPORT=mpi: pairwise 1.13-1.46 of Open MPI's time on 2 x 2
    // at 1-16 MiB), and Open MPI's own (ob1 over its TCP BTL; the UCX pml
    // is off in Debian's /etc/openmpi/openmpi-mca-params.conf, and would want
    // InfiniBand) through MPI_Ialltoall stays level with its blocking
    // call. tutti / Open MPI time, medians of 2 jobs each, barrier / back
    // to back, 2026-11-28: 4 x 2 pairwise 1 / 4 / 16 MiB 2.25 / 1.08, 2.31 /
    // 3.90, 1.46 / 2.10, 512 KiB 1.18 / 2.18; "mpi" 1.09 / 1.07, 1.10 /
    // 1.03, 1.03 / 1.22, 1.04 / 1.03. 2 x 2 pairwise 1.11-1.49 at 1-16 MiB,
    // "mpi" 0.80-1.13; at 128-512 KiB the two are level (pairwise 0.96-1.47,
    // "mpi" 1.02-1.30). Raw: docs/perf/cluster-alltoall-mpi-2026-11-28.txt.
    // Except 512 KiB, through each node's segment: 2026-12-06, barrier /
    // back to back, hierarchical_shm 0.88 / 0.74 on 2 x 2 (6 rounds; the
    // pairwise rule before it 0.99 / 1.16), 0.81 / 0.80 on 3 x 2 (5;
    // pairwise 0.88 / 0.84), 0.84 / 0.84 on 4 x 2 (8; "mpi" 1.06 / 1.01;
    // 2026-11-30 0.85 / 0.86); at 1 MiB it trails (1.08-1.39 / 1.22-1.54)
    // and "mpi" stays. Raw: docs/perf/cluster-alltoall-mid-2026-12-06.txt
    // (pairwise's 2026-11-29 lead on 2 x 2, 0.79-0.95 against "mpi"'s
    // 1.01-1.06: docs/perf/cluster-alltoall-512k-2026-11-29.txt).
    add(Collective::Alltoall, 512 * K, 1 * M, "hierarchical_shm").nodes = {2, kAny};
    add(Collective::Alltoall, 512 * K, kAny, "mpi").nodes = {2, kAny};
    rules.back().memory = MemoryType::Host;
    // alltoallv across nodes goes to the MPI library too (host buffers):
    // 2026-11-29, alternating jobs, both methods, tutti / Open MPI medians,
    // barrier / back to back, 64 B-16 MiB: 2 x 2 (3 rounds) "mpi" 0.88-1.29
    // / 0.94-1.93 against pairwise's 1.06-3.13 / 0.86-4.16 and the
    // node-aware "hierarchical"'s 0.95-3.13 / 1.10-5.52; 4 x 2 (2 rounds)
    // "mpi" 0.96-1.37 / 0.91-1.95 against 1.23-2.10 / 1.14-2.94 and
    // 0.84-3.71 / 1.07-18.9. "hierarchical" halves the messages between
    // nodes but adds a hop inside each node, and with ranks sharing cores
    // every hop waits for a descheduled rank: unmeasured where each rank has
    // a core. Raw: docs/perf/cluster-{2x2,4x2}-alltoallv-2026-11-29.txt.
    // Since the progress thread stays asleep while a rank waits (2026-11-29,
    // docs/perf/ucx-thread-sleep-2026-11-29.txt) the node-aware
    // "hierarchical_shm" (its hop inside the node through the segment,
    // blocks of 128 KiB and more straight to their rank) is ahead at most
    // sizes: tutti / Open MPI, barrier / back to back, 64 B-256 KiB per rank:
    // 2 x 2 (3 rounds) 0.68-1.03 / 0.66-1.26 against "mpi"'s 1.02-1.19 /
    // 1.03-2.33; 4 x 2 (2 rounds) 0.73-0.96 / 0.49-0.86 against 0.94-1.16 /
    // 0.90-1.87. Behind at 2-16 MiB: 2 x 2 1.06-1.18 / 0.86-1.00 against
    // 0.91-1.05 / 0.88-1.28, 4 x 2 1.12-1.18 / 1.06-1.39 against 0.93-0.96
    // / 0.96-0.98. 20 of 28 cells at or below Open MPI against 8: one rule
    // for every size, it leads. Non-blocking calls and device buffers, which
    // it refuses, stay with the MPI library. Raw:
    // docs/perf/cluster-alltoallv-shm-rule-2026-11-29.txt.
    // Since 2026-12-06 the rules see the size the ranks agree on (the
    // smallest of recent calls, base/agreed_size.hpp): from 2 MiB per rank
    // "mpi" (tutti's "linear" and "pairwise" there 1.02-2.28 of Open MPI's
    // time on 4 x 2). 2-16 MiB cells at or below Open MPI, 2 x 2 and 4 x 2,
    // both methods: 11 of 16 against "hierarchical_shm"'s 3 (alternating
    // jobs): docs/perf/cluster-alltoallv-agreed-size-2026-12-06.txt.
    add(Collective::Alltoallv, 2 * M, kAny, "mpi").nodes = {2, kAny};
    rules.back().memory = MemoryType::Host;
    add(Collective::Alltoallv, 0, kAny, "hierarchical_shm").nodes = {2, kAny};
    rules.back().memory = MemoryType::Host;
    add(Collective::Alltoallv, 0, kAny, "mpi").nodes = {2, kAny};
    rules.back().memory = MemoryType::Host;
    // alltoall of small blocks through one leader per node from 3 nodes:
    // 4 x 2, 2026-11-26, three job pairs (8 ranks on 2 cores, noisy):
    // "leader" 142-213 us at 32 B (Bruck 196-237) and 0.89-1.74 of Open
    // MPI's speed at 128 B-2 KiB (Bruck 0.65-1.25). On 2 x 2 the flat
    // algorithms win (64 B: 31-40 us against 43).
    add(Collective::Alltoall, 0, 2 * K, "leader").nodes = {3, kAny};
    add(Collective::Bcast, 0, kAny, "leader").nodes = {2, kAny};
    add(Collective::Reduce, 0, kAny, "leader").nodes = {2, kAny};
    // Latency-bound sizes get log(P)-round algorithms, bandwidth-bound sizes
    // the ones that move the fewest bytes per rank.
    add(Collective::Allreduce, 0, 16 * K, "recursive_doubling");
    add(Collective::Allreduce, 16 * K, 256 * K, "recursive_halving");
    add(Collective::Allreduce, 256 * K, kAny, "ring");
    add(Collective::Reduce, 0, 64 * K, "tree");
    add(Collective::Reduce, 64 * K, kAny, "recursive_halving");
    add(Collective::Bcast, 0, 64 * K, "tree");
    add(Collective::Bcast, 64 * K, kAny, "scatter_allgather");
    add(Collective::Allgather, 0, 64 * K, "recursive_doubling");
    add(Collective::Allgather, 0, 64 * K, "bruck");
    add(Collective::Allgather, 64 * K, kAny, "ring");
    add(Collective::ReduceScatter, 0, 64 * K, "recursive_halving");
    add(Collective::ReduceScatter, 64 * K, kAny, "ring");
    add(Collective::Gather, 0, 256 * K, "tree");
    add(Collective::Gather, 256 * K, kAny, "linear");
    add(Collective::Scatter, 0, 256 * K, "tree");
    add(Collective::Scatter, 256 * K, kAny, "linear");
    add(Collective::Alltoall, 0, 4 * K, "bruck");
    add(Collective::Alltoall, 0, kAny, "pairwise");
    add(Collective::Alltoallv, 0, kAny, "pairwise");
    add(Collective::Barrier, 0, kAny, "dissemination");
    return TuningTable(std::move(rules));
  }();
  return table;
}

}  // namespace tutti
