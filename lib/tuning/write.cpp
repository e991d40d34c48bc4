#include "tuning/write.hpp"

#include <cmath>
#include <cstdio>
#include <algorithm>
#include <map>

#include "base/status.hpp"

namespace tutti {
namespace {

bool same_choice(const TunedCandidate& a, const TunedCandidate& b) {
  return a.algorithm == b.algorithm && a.params == b.params;
}

std::string candidate_name(const TunedCandidate& c) {
  std::string out = c.algorithm;
  if (c.params.chunk_bytes) out += str(" chunk ", format_size(c.params.chunk_bytes));
  if (c.params.radix) out += str(" radix ", c.params.radix);
  return out;
}

std::string micros(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, us < 100 ? "%.2f" : us < 10000 ? "%.1f" : "%.0f", us);
  return buf;
}

}  // namespace

const TunedCandidate* tuned_runner_up(const TunedSize& s) {
  if (s.ranked.size() < 2) return nullptr;
  for (const TunedCandidate& c : s.ranked)
    if (c.algorithm != s.ranked[0].algorithm) return &c;
  return &s.ranked[1];
}

namespace {

std::string percent_slower(double t, double best) {
  char pct[32];
  std::snprintf(pct, sizeof pct, "%+.1f%%", best > 0 ? (t / best - 1) * 100 : 0.0);
  return pct;
}

// "#   64K: ring chunk 256K 123.4 us; runner-up recursive_halving 130.2 us (+5.5%)",
// plus what the rule chose when it is not the fastest here.
std::string size_comment(const TunedSize& s, const TuningRule& rule) {
  std::string out = str("#   ", format_size(s.bytes), ": ");
  if (s.ranked.empty()) return out + "no candidate ran";
  const TunedCandidate& w = s.ranked[0];
  out += str(candidate_name(w), " ", micros(w.time_us), " us");
  if (const TunedCandidate* r_ptr = tuned_runner_up(s)) {
    const TunedCandidate& r = *r_ptr;
    out += str("; runner-up ", candidate_name(r), " ", micros(r.time_us), " us (",
               percent_slower(r.time_us, w.time_us), ")");
  } else {
    out += "; no runner-up";
  }
  if (w.algorithm != rule.algorithm || !(w.params == rule.params)) {
    for (const TunedCandidate& c : s.ranked)
      if (c.algorithm == rule.algorithm && c.params == rule.params)
        out += str("; this rule's ", candidate_name(c), " ", micros(c.time_us), " us (",
                   percent_slower(c.time_us, w.time_us), ")");
  }
  return out;
}

bool size_free(Collective c) { return c == Collective::Alltoallv || c == Collective::Barrier; }

TuningRule rule_from(const TuningRule& base, Collective coll, const TunedCandidate& c) {
  TuningRule r = base;
  r.coll = coll;
  r.algorithm = c.algorithm;
  r.params = c.params;
  r.origin = "tutti-tune";
  return r;
}

// alltoallv and barrier: the candidate closest to the fastest overall.
std::optional<TunedCandidate> best_overall(const TunedCollective& t) {
  std::map<std::string, std::pair<double, int>> score;  // name -> (sum log ratio, sizes)
  std::map<std::string, TunedCandidate> by_name;
  int sizes = 0;
  for (const TunedSize& s : t.sizes) {
    if (s.ranked.empty()) continue;
    ++sizes;
    for (const TunedCandidate& c : s.ranked) {
      const std::string key = candidate_name(c);
      by_name.emplace(key, c);
      auto& [sum, n] = score[key];
      sum += std::log(std::max(c.time_us, 1e-3) / std::max(s.ranked[0].time_us, 1e-3));
      ++n;
    }
  }
  std::optional<TunedCandidate> best;
  double best_score = 0;
  for (const auto& [key, sn] : score) {
    if (sn.second != sizes) continue;  // measured everywhere, or not comparable
    if (!best || sn.first < best_score) {
      best = by_name[key];
      best_score = sn.first;
    }
  }
  return best;
}

}  // namespace

std::vector<TuningRule> merge_tuned(const TunedCollective& t, const TuningRule& base,
                                    double tolerance) {
  std::vector<TuningRule> rules;
  if (size_free(t.coll)) {
    if (auto best = best_overall(t)) rules.push_back(rule_from(base, t.coll, *best));
    return rules;
  }
  const TunedCandidate* current = nullptr;
  for (const TunedSize& s : t.sizes) {
    if (s.ranked.empty()) continue;
    const TunedCandidate& w = s.ranked[0];
    if (current) {
      // The current rule's choice, as measured at this size.
      auto same = std::find_if(s.ranked.begin(), s.ranked.end(),
                               [&](const TunedCandidate& c) { return same_choice(c, *current); });
      if (same != s.ranked.end() && same->time_us <= w.time_us * (1 + tolerance)) continue;
    }
    if (!rules.empty()) rules.back().bytes.hi = s.bytes;
    TuningRule r = rule_from(base, t.coll, w);
    r.bytes = {rules.empty() ? 0 : s.bytes, ValueRange{}.hi};
    rules.push_back(r);
    current = &w;
  }
  return rules;
}

const TuningRule* tuned_rule_for(const std::vector<TuningRule>& rules, Collective coll,
                                 uint64_t bytes) {
  for (const TuningRule& r : rules)
    if (r.coll == coll && r.bytes.contains(size_free(coll) ? 0 : bytes)) return &r;
  return nullptr;
}

std::string toml_quote(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string write_tuning_toml(const std::string& preamble, const TuningProvenance& p,
                              const TuningSection& shape, const std::vector<TunedCollective>& tuned,
                              const TuningRule& base, double tolerance) {
  std::string out;
  size_t start = 0;
  while (start < preamble.size()) {
    size_t end = preamble.find('\n', start);
    if (end == std::string::npos) end = preamble.size();
    const std::string line = preamble.substr(start, end - start);
    out += line.empty() ? "#\n" : "# " + line + "\n";
    start = end + 1;
  }
  out += "\n[tutti]\n";
  out += "cluster = " + toml_quote(p.cluster) + "\n";
  out += "generated_by = " + toml_quote(p.generated_by) + "\n";
  out += "date = " + toml_quote(p.date) + "\n";
  out += "tutti_version = " + toml_quote(p.tutti_version) + "\n";
  out += "\n[[section]]\n";
  out += "name = " + toml_quote(shape.name) + "\n";
  const ValueRange any;
  if (!(shape.ranks == any)) out += "ranks = " + toml_quote(format_range(shape.ranks)) + "\n";
  if (!(shape.nodes == any)) out += "nodes = " + toml_quote(format_range(shape.nodes)) + "\n";
  if (!(shape.ppn == any)) out += "ppn = " + toml_quote(format_range(shape.ppn)) + "\n";
  out += "\n";

  for (const TunedCollective& t : tuned) {
    const std::vector<TuningRule> rules = merge_tuned(t, base, tolerance);
    out += str("# ---- ", collective_name(t.coll), " ----\n");
    if (rules.empty()) {
      out += "# no candidate ran correctly at any size: the built-in defaults apply\n\n";
      continue;
    }
    if (size_free(t.coll))
      out += str("# ", collective_name(t.coll), " rules match at size 0 whatever the size",
                 t.coll == Collective::Alltoallv ? " (sizes differ between ranks)" : "",
                 ": one rule, the candidate\n# closest to the fastest over all sizes measured\n");
    for (const TuningRule& r : rules) {
      out += "[[section.rule]]\n";
      out += str("collective = \"", collective_name(r.coll), "\"\n");
      out += "bytes = " + toml_quote(format_range(r.bytes)) + "\n";
      if (!(r.ranks == any)) out += "ranks = " + toml_quote(format_range(r.ranks)) + "\n";
      if (!(r.nodes == any)) out += "nodes = " + toml_quote(format_range(r.nodes)) + "\n";
      if (r.memory) out += str("memory = \"", memory_type_name(*r.memory), "\"\n");
      if (r.dtype) out += str("dtype = \"", datatype_name(*r.dtype), "\"\n");
      if (r.shared_cores) out += str("cores = \"", cores_name(*r.shared_cores), "\"\n");
      if (r.fast_reads) out += str("reads = \"", reads_name(*r.fast_reads), "\"\n");
      out += "algorithm = " + toml_quote(r.algorithm) + "\n";
      std::string params;
      if (r.params.chunk_bytes) params += str("chunk_bytes = \"", format_size(r.params.chunk_bytes), "\"");
      if (r.params.radix) params += str(params.empty() ? "" : ", ", "radix = ", r.params.radix);
      if (!params.empty()) out += "params = { " + params + " }\n";
      for (const TunedSize& s : t.sizes)
        if (size_free(t.coll) || r.bytes.contains(s.bytes)) out += size_comment(s, r) + "\n";
      out += "\n";
    }
  }
  return out;
}

}  // namespace tutti
