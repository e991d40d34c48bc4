// Turning measurements into a tuning file (what tutti-tune writes): per
// collective, the fastest candidate at each measured size, consecutive sizes
// with the same winner merged into one size range, each rule annotated with
// the measured times of the winner and the runner-up.
#pragma once

#include <string>
#include <vector>

#include "tuning/file.hpp"

namespace tutti {

struct TunedCandidate {
  std::string algorithm;
  AlgoParams params;
  double time_us = 0;
};

// One measured size: every candidate that ran correctly, fastest first.
struct TunedSize {
  uint64_t bytes = 0;  // the message size the dispatcher matches on
  std::vector<TunedCandidate> ranked;
};

struct TunedCollective {
  Collective coll = Collective::Allreduce;
  std::vector<TunedSize> sizes;  // ascending bytes
};

// The rules for one collective, in order, with `base`'s ranks, nodes,
// memory and dtype. Rule i covers [first size it won, first size the next
// rule won); the first starts at 0 and the last is unbounded. alltoallv and
// barrier (matched at size 0 whatever their size) get one rule "0-": the
// candidate with the best geometric mean of time / fastest time over sizes.
// `tolerance` > 0 smooths noise: a rule keeps going through a size where
// its choice was measured within (1 + tolerance) of the fastest there.
// `origin` of each rule: "tutti-tune".
std::vector<TuningRule> merge_tuned(const TunedCollective& tuned, const TuningRule& base,
                                    double tolerance = 0);

// The runner-up at one size: the fastest other algorithm (else the next
// chunk size of the same one); null if only one candidate ran.
const TunedCandidate* tuned_runner_up(const TunedSize& size);

// The rule of `rules` (merge_tuned's result) that a call of `bytes` matches.
const TuningRule* tuned_rule_for(const std::vector<TuningRule>& rules, Collective coll,
                                 uint64_t bytes);

// The whole file: a comment block (`preamble`, one "# " line per line), the
// [tutti] header, and one [[section]] for `shape` holding every rule.
std::string write_tuning_toml(const std::string& preamble, const TuningProvenance& provenance,
                              const TuningSection& shape, const std::vector<TunedCollective>& tuned,
                              const TuningRule& base, double tolerance = 0);

// A TOML basic string, quoted and escaped.
std::string toml_quote(const std::string& text);

}  // namespace tutti
