// The user's tuning rules: the per-cluster TOML file and the TUTTI_TUNE
// string, parsed, validated (every problem named by file, line and value),
// selected for the job's shape, and combined into the table a communicator
// consults before the built-in defaults. docs/TUNING.md describes the format.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "algos/registry.hpp"
#include "base/topology.hpp"
#include "tuning/table.hpp"

namespace tutti {

// The [tutti] header: where the table comes from.
struct TuningProvenance {
  std::string cluster, generated_by, date, tutti_version;
};

// What a [[section]] is matched on.
struct JobShape {
  int nranks = 1, nnodes = 1, ppn = 1;  // ppn: the most ranks on one node
  static JobShape of(const Topology& t) { return {t.nranks, t.nnodes, t.max_ranks_per_node}; }
};

struct TuningSection {
  std::string name;    // [[section]] name; "" for the file's top-level [[rule]]s
  std::string origin;  // "file.toml:12" for a [[section]], "file.toml" for the top level
  ValueRange ranks, nodes, ppn;
  std::vector<TuningRule> rules;
  bool applies_to(const JobShape& shape) const;
};

struct TuningFile {
  std::string name;
  TuningProvenance provenance;
  // The [[section]]s in file order, then the top-level [[rule]]s (if any)
  // as a last, unnamed section that applies to every job.
  std::vector<TuningSection> sections;
  // Non-strict mode: the problems that disabled a row or a section.
  std::vector<std::string> warnings;

  // The rules for a job of this shape, in match order.
  std::vector<TuningRule> rules_for(const JobShape& shape) const;
  size_t rule_count() const;
};

// Parses the text of a tuning file; `name` prefixes every message
// ("name:12: unknown key 'algoritm' (expected one of ...)"). Strict: throws
// Error(TUTTI_ERR_INVALID_ARGUMENT) listing every problem, one per line.
// Non-strict: drops each offending row (or section) and lists the problem in
// `warnings`. A TOML syntax error throws in both modes: nothing after it can
// be trusted.
TuningFile parse_tuning_toml(std::string_view text, const std::string& name, bool strict);
// The same for a file on disk (an unreadable file always throws).
TuningFile read_tuning_file(const std::string& path, bool strict);

// TUTTI_TUNE, one line of rules (docs/TUNING.md):
//   allreduce:0-4K:recursive_doubling,4K-:ring@chunk_bytes=1M;bcast[ranks=8-]:0-:tree
// Same validation and strictness as a file; origins read "TUTTI_TUNE '<rule>'".
struct TuneRules {
  std::vector<TuningRule> rules;
  std::vector<std::string> warnings;
};
TuneRules parse_tune_string(std::string_view text, bool strict);

// Where the tuning file is: `explicit_path` (TUTTI_TUNING_FILE; must exist),
// else $XDG_CONFIG_HOME/tutti/tuning.toml (XDG_CONFIG_HOME defaults to
// $HOME/.config), else <datadir>/tuning.toml; nothing if none exists.
struct TuningFileLocation {
  std::string path;
  std::string how;  // "TUTTI_TUNING_FILE", "$XDG_CONFIG_HOME", "installed default"
};
std::optional<TuningFileLocation> find_tuning_file(const std::string& explicit_path,
                                                   const char* xdg_config_home, const char* home,
                                                   const std::string& datadir);
// The same with this process's environment and the installed data dir.
std::optional<TuningFileLocation> find_tuning_file(const std::string& explicit_path);

// Everything a communicator (or tutti-info --explain) uses from the user.
struct UserTuning {
  TuningTable table;  // TUTTI_TUNE's rules, then the file's rules for this job
  std::optional<TuningFileLocation> file;
  TuningProvenance provenance;
  size_t tune_rules = 0;        // from TUTTI_TUNE
  size_t file_rules = 0;        // from the file, for this job's shape
  size_t file_rules_total = 0;  // in the file
  std::vector<std::string> warnings;
  uint64_t hash = 0;  // tuning_hash(table)
  // "TUTTI_TUNE (2 rules) + /etc/tutti.toml via TUTTI_TUNING_FILE (cluster
  // 'hpc', by tutti-tune 0.1.0, 2025-01-01; 5 of 9 rules for this job), hash 0x.."
  std::string describe() const;
};
// `tune`: TUTTI_TUNE; `file`: TUTTI_TUNING_FILE (may be ""). Throws Error.
UserTuning load_user_tuning(const std::string& tune, const std::string& file, bool strict,
                            const JobShape& shape);

// The parameters a tuning rule may set.
inline constexpr std::string_view kTuningParams[] = {"chunk_bytes", "radix"};
// Whether the schedules of `algo` depend on `param`, found by building them
// with two values of it on a few rank counts (cached). "mpi" uses none.
bool algorithm_uses_param(const algos::Algorithm& algo, std::string_view param);

}  // namespace tutti
