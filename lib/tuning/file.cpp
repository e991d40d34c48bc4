#include "tuning/file.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include "base/status.hpp"
#include "engine/schedule.hpp"
#include "tutti_config.h"
#if TUTTI_HAVE_TOML
#include <toml++/toml.h>
#endif

namespace tutti {
namespace {

constexpr std::string_view kRowKeys[] = {"collective", "bytes", "ranks", "nodes", "memory",
                                         "dtype", "cores", "reads", "algorithm", "params",
                                         "alternative"};
constexpr std::string_view kSectionKeys[] = {"name", "ranks", "nodes", "ppn", "rule"};
constexpr std::string_view kHeaderKeys[] = {"cluster", "generated_by", "date", "tutti_version"};
constexpr std::string_view kTopKeys[] = {"tutti", "section", "rule"};
constexpr std::string_view kTuneFilters[] = {"ranks", "nodes", "memory", "dtype", "cores", "reads"};

template <typename Names>
std::string join(const Names& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    out += std::string_view(n);
  }
  return out;
}

std::string collective_names() {
  std::string out;
  for (Collective c : kAllCollectives) out += str(out.empty() ? "" : ", ", collective_name(c));
  return out;
}

std::string datatype_names() {
  std::string out;
  for (Datatype d : kAllDatatypes) out += str(out.empty() ? "" : ", ", datatype_name(d));
  return out;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(sep, start);
    out.push_back(std::string(s.substr(start, end == std::string_view::npos ? end : end - start)));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

// Problems found in one source, each "where: message"; `line` orders them.
// Non-strict mode keeps them as warnings that say what was dropped.
class Problems {
 public:
  void add(std::string where, std::string message, int line = 0,
           std::string_view dropped = "the rule is ignored") {
    list_.push_back({line, str(where, ": ", message), std::string(dropped)});
  }
  size_t size() const { return list_.size(); }
  // Strict: throws every problem at once; otherwise they become warnings.
  void finish(const std::string& source, bool strict, std::vector<std::string>& warnings) {
    std::stable_sort(list_.begin(), list_.end(),
                     [](const Entry& a, const Entry& b) { return a.line < b.line; });
    if (list_.empty()) return;
    if (strict) {
      std::string message =
          str(source, ": ", list_.size(), list_.size() == 1 ? " error" : " errors",
              " (TUTTI_TUNING_STRICT=0 turns them into warnings that disable the offending rules)");
      for (const Entry& e : list_) message += "\n  " + e.text;
      throw Error(TUTTI_ERR_INVALID_ARGUMENT, message);
    }
    for (const Entry& e : list_) warnings.push_back(str(e.text, "; ", e.dropped));
  }

 private:
  struct Entry {
    int line;
    std::string text, dropped;
  };
  std::vector<Entry> list_;
};

// A range from a string ("0-8K") or an integer (exactly that value).
std::optional<ValueRange> range_from_text(const std::string& text, const std::string& key,
                                          std::string* error) {
  try {
    return parse_range(text);
  } catch (const Error& e) {
    *error = str(key, ": ", e.what());
    return std::nullopt;
  }
}

std::optional<uint64_t> size_from_text(const std::string& text, std::string* error) {
  try {
    const ValueRange r = parse_range(text);
    if (r.hi == r.lo + 1) return r.lo;
  } catch (const Error&) {
  }
  *error = str("'", text, "' is not a size (e.g. 65536, \"64K\", \"1M\")");
  return std::nullopt;
}

// Parameter values: whether they are sane, whatever the algorithm.
constexpr uint64_t kMinChunk = 256, kMaxChunk = uint64_t{1} << 30;
constexpr int kMaxRadix = 64;

std::optional<std::string> set_param(AlgoParams& p, const std::string& key, const std::string& text,
                                     std::optional<int64_t> integer) {
  if (key == "chunk_bytes") {
    std::string error;
    std::optional<uint64_t> v;
    if (integer) {
      if (*integer < 0) return str("chunk_bytes: ", *integer, " is negative");
      v = static_cast<uint64_t>(*integer);
    } else {
      v = size_from_text(text, &error);
      if (!v) return str("chunk_bytes: ", error);
    }
    if (*v < kMinChunk || *v > kMaxChunk)
      return str("chunk_bytes: ", integer ? std::to_string(*integer) : "'" + text + "'",
                 " is outside [", format_size(kMinChunk), ", ", format_size(kMaxChunk), "]");
    p.chunk_bytes = *v;
    return std::nullopt;
  }
  if (key == "radix") {
    int64_t v = 0;
    if (integer) {
      v = *integer;
    } else {
      char* end = nullptr;
      v = std::strtoll(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0') return str("radix: '", text, "' is not an integer");
    }
    if (v < 2 || v > kMaxRadix)
      return str("radix: ", v, " is outside [2, ", kMaxRadix, "]");
    p.radix = static_cast<int>(v);
    return std::nullopt;
  }
  return str("unknown parameter '", key, "' (expected one of ", join(kTuningParams), ")");
}

// Checks that need the whole rule: the algorithm runs the collective and
// uses the parameters given, and the size range can match at all.
std::optional<std::string> check_rule(const TuningRule& r) {
  const algos::Algorithm* algo = algos::find_algorithm(r.coll, r.algorithm);
  if (!algo) {
    std::string elsewhere;
    for (Collective c : kAllCollectives)
      if (algos::find_algorithm(c, r.algorithm))
        elsewhere += str(elsewhere.empty() ? "" : ", ", collective_name(c));
    if (!elsewhere.empty())
      return str("algorithm '", r.algorithm, "' does not support ", collective_name(r.coll),
                 " (it runs ", elsewhere, "; ", collective_name(r.coll),
                 " algorithms: ", algos::algorithm_names(r.coll), ")");
    return str("unknown algorithm '", r.algorithm, "' (", collective_name(r.coll),
               " algorithms: ", algos::algorithm_names(r.coll), ")");
  }
  for (std::string_view param : kTuningParams) {
    const bool set = param == "chunk_bytes" ? r.params.chunk_bytes != 0 : r.params.radix != 0;
    if (!set || algorithm_uses_param(*algo, param)) continue;
    std::string users;
    for (const algos::Algorithm* a : algos::algorithms_for(r.coll))
      if (algorithm_uses_param(*a, param)) users += str(users.empty() ? "" : ", ", a->name);
    return str(collective_name(r.coll), " algorithm '", r.algorithm, "' does not use ", param,
               " (", collective_name(r.coll), " algorithms that do: ",
               users.empty() ? "none" : users, ")");
  }
  // TUTTI_FOLLOW_STATE's other candidate (api/state_choice.hpp), with its
  // default parameters.
  if (!r.alternative.empty()) {
    if (!algos::find_algorithm(r.coll, r.alternative))
      return str("unknown alternative '", r.alternative, "' (", collective_name(r.coll),
                 " algorithms: ", algos::algorithm_names(r.coll), ")");
    if (r.alternative == r.algorithm)
      return str("alternative '", r.alternative, "' is the rule's own algorithm");
  }
  if (r.coll == Collective::Barrier && !r.bytes.contains(0))
    return str("barrier rules are matched at size 0 (a barrier moves no data), so bytes '",
               format_range(r.bytes), "' never matches; use \"0-\"");
  // alltoallv: the ranks agree on a size only across nodes (base/agreed_size.hpp).
  if (r.coll == Collective::Alltoallv && !r.bytes.contains(0) && r.nodes.contains(1))
    return str("alltoallv rules on one node are matched at size 0 (sizes differ between ranks; "
               "they agree on one only across nodes), so bytes '",
               format_range(r.bytes), "' never matches there; add nodes=2- or use \"0-\"");
  return std::nullopt;
}

// Two optional filters (memory, dtype, cores, reads) can match one call: either is
// unset, or they are equal.
template <typename T>
bool compatible(const std::optional<T>& a, const std::optional<T>& b) {
  return !a || !b || *a == *b;
}

// Rows of one section must be disjoint (a call matches at most one) and,
// within one (collective, ranks, nodes, memory, dtype, cores, reads) group, sorted by size.
std::optional<std::string> check_against_section(const TuningRule& r,
                                                 const std::vector<TuningRule>& earlier) {
  for (const TuningRule& e : earlier) {
    if (e.coll != r.coll) continue;
    if (e.bytes.overlaps(r.bytes) && e.ranks.overlaps(r.ranks) && e.nodes.overlaps(r.nodes) &&
        compatible(e.memory, r.memory) && compatible(e.dtype, r.dtype) &&
        compatible(e.shared_cores, r.shared_cores) && compatible(e.fast_reads, r.fast_reads))
      return str(collective_name(r.coll), " bytes '", format_range(r.bytes),
                 "' overlaps the rule at ", e.origin, " (", rule_to_string(e),
                 "): a call would match both; make the ranges of a section disjoint");
  }
  for (const TuningRule& e : earlier) {
    if (e.coll == r.coll && e.ranks == r.ranks && e.nodes == r.nodes && e.memory == r.memory &&
        e.dtype == r.dtype && e.shared_cores == r.shared_cores && e.fast_reads == r.fast_reads &&
        r.bytes.lo < e.bytes.lo)
      return str(collective_name(r.coll), " bytes '", format_range(r.bytes),
                 "' is out of order: it comes after the rule at ", e.origin, " (bytes '",
                 format_range(e.bytes), "'); sort the rules of a section by size");
  }
  return std::nullopt;
}

#if TUTTI_HAVE_TOML

int line_of(const toml::node& n) { return static_cast<int>(n.source().begin.line); }
int line_of(const toml::key& k) { return static_cast<int>(k.source().begin.line); }

std::string type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    default: return "nothing";
  }
}

std::string value_text(const toml::node& n) {
  if (const auto* s = n.as_string()) return s->get();
  std::ostringstream os;
  if (const auto* i = n.as_integer()) os << i->get();
  else if (const auto* d = n.as_date_time()) os << d->get();
  else if (const auto* d = n.as_date()) os << d->get();
  else os << type_name(n);
  return os.str();
}

constexpr std::string_view kSectionDropped = "the section is ignored, with its rules";

class TomlReader {
 public:
  TomlReader(std::string name, bool strict) : name_(std::move(name)), strict_(strict) {}

  TuningFile read(std::string_view text) {
    TuningFile f;
    f.name = name_;
    toml::table doc;
    try {
      doc = toml::parse(text, std::string_view(name_));
    } catch (const toml::parse_error& e) {
      fail(TUTTI_ERR_INVALID_ARGUMENT, name_, ":", e.source().begin.line, ": TOML syntax error: ",
           e.description());
    }
    const toml::node* top_rules = nullptr;
    for (auto&& [key, node] : doc) {
      const std::string k(key.str());
      if (k == "tutti") {
        read_header(node, f.provenance);
      } else if (k == "section") {
        const toml::array* arr = node.as_array();
        if (!arr || !arr->is_array_of_tables()) {
          problem(line_of(node),
                  str("'section' must be an array of tables ([[section]]), got ", type_name(node)),
                  "it is ignored");
          continue;
        }
        for (const toml::node& s : *arr)
          if (auto sec = read_section(*s.as_table())) f.sections.push_back(std::move(*sec));
      } else if (k == "rule") {
        top_rules = &node;
      } else {
        problem(line_of(key), str("unknown key '", k, "' (expected one of ", join(kTopKeys), ")"),
                "it is ignored");
      }
    }
    if (top_rules) {
      TuningSection top;
      top.origin = name_;
      read_rules(*top_rules, top);
      if (!top.rules.empty()) f.sections.push_back(std::move(top));
    }
    problems_.finish(name_, strict_, f.warnings);
    return f;
  }

 private:
  void problem(int line, std::string message, std::string_view dropped = "the rule is ignored") {
    problems_.add(str(name_, ":", line), std::move(message), line, dropped);
  }

  void read_header(const toml::node& node, TuningProvenance& p) {
    const toml::table* t = node.as_table();
    if (!t) {
      problem(line_of(node), str("'tutti' must be a table ([tutti]), got ", type_name(node)),
              "it is ignored");
      return;
    }
    for (auto&& [key, v] : *t) {
      const std::string k(key.str());
      std::string* field = k == "cluster"         ? &p.cluster
                           : k == "generated_by"  ? &p.generated_by
                           : k == "date"          ? &p.date
                           : k == "tutti_version" ? &p.tutti_version
                                                  : nullptr;
      if (!field) {
        problem(line_of(key),
                str("unknown key 'tutti.", k, "' (expected one of ", join(kHeaderKeys), ")"),
                "it is ignored");
      } else if (v.is_string() || (k == "date" && (v.is_date_time() || v.is_date()))) {
        *field = value_text(v);
      } else {
        problem(line_of(v), str("tutti.", k, " must be a string, got ", type_name(v)),
                "it is ignored");
      }
    }
  }

  // A range key of a section or rule: a string ("0-8K") or an integer.
  bool read_range(const toml::node& v, const std::string& key, ValueRange& out,
                  std::string_view dropped = "the rule is ignored") {
    std::string error;
    if (const auto* i = v.as_integer()) {
      if (i->get() < 0) {
        problem(line_of(v), str(key, ": ", i->get(), " is negative"), dropped);
        return false;
      }
      const auto n = static_cast<uint64_t>(i->get());
      out = {n, n + 1};
      return true;
    }
    if (!v.is_string()) {
      problem(line_of(v),
              str(key, " must be a range string like \"0-8K\" or an integer, got ", type_name(v)),
              dropped);
      return false;
    }
    if (auto r = range_from_text(value_text(v), key, &error)) {
      out = *r;
      return true;
    }
    problem(line_of(v), error, dropped);
    return false;
  }

  std::optional<TuningSection> read_section(const toml::table& t) {
    TuningSection s;
    s.origin = str(name_, ":", line_of(t));
    const size_t before = problems_.size();
    const toml::node* rules = nullptr;
    for (auto&& [key, v] : t) {
      const std::string k(key.str());
      if (k == "name") {
        if (v.is_string()) s.name = value_text(v);
        else problem(line_of(v), str("section name must be a string, got ", type_name(v)), kSectionDropped);
      } else if (k == "ranks") {
        read_range(v, "ranks", s.ranks, kSectionDropped);
      } else if (k == "nodes") {
        read_range(v, "nodes", s.nodes, kSectionDropped);
      } else if (k == "ppn") {
        read_range(v, "ppn", s.ppn, kSectionDropped);
      } else if (k == "rule") {
        rules = &v;
      } else {
        problem(line_of(key),
                str("unknown section key '", k, "' (expected one of ", join(kSectionKeys), ")"),
                kSectionDropped);
      }
    }
    // The shape it applies to is unknown: drop it all.
    if (problems_.size() != before) return std::nullopt;
    if (rules) read_rules(*rules, s);
    return s;
  }

  void read_rules(const toml::node& node, TuningSection& s) {
    const toml::array* arr = node.as_array();
    if (!arr || !arr->is_array_of_tables()) {
      problem(line_of(node),
              str("'rule' must be an array of tables ([[rule]] or [[section.rule]]), got ",
                  type_name(node)),
              "it is ignored");
      return;
    }
    for (const toml::node& n : *arr) {
      auto rule = read_rule(*n.as_table());
      if (!rule) continue;
      if (auto why = check_against_section(*rule, s.rules)) {
        problem(line_of(n), *why);
        continue;
      }
      s.rules.push_back(std::move(*rule));
    }
  }

  std::optional<TuningRule> read_rule(const toml::table& t) {
    TuningRule r;
    const int line = line_of(t);
    r.origin = str(name_, ":", line);
    bool ok = true, have_coll = false, have_algo = false;
    auto bad = [&](int at, std::string message) {
      problem(at, std::move(message));
      ok = false;
    };
    for (auto&& [key, v] : t) {
      const std::string k(key.str());
      if (k == "bytes" || k == "ranks" || k == "nodes") {
        ValueRange& target = k == "bytes" ? r.bytes : k == "ranks" ? r.ranks : r.nodes;
        ok = read_range(v, k, target) && ok;
      } else if (k == "collective" || k == "algorithm" || k == "memory" || k == "dtype" ||
                 k == "cores" || k == "reads" || k == "alternative") {
        // Present, even if wrong: its own message says what is wrong.
        have_coll = have_coll || k == "collective";
        have_algo = have_algo || k == "algorithm";
        if (!v.is_string()) {
          bad(line_of(v), str(k, " must be a string, got ", type_name(v)));
          continue;
        }
        const std::string text = value_text(v);
        if (k == "collective") {
          if (auto c = parse_collective(text)) {
            r.coll = *c;
          } else {
            bad(line_of(v), str("unknown collective '", text, "' (expected one of ",
                                collective_names(), ")"));
          }
        } else if (k == "algorithm") {
          r.algorithm = text;
        } else if (k == "alternative") {
          r.alternative = text;
        } else if (k == "memory") {
          if (auto m = parse_memory_type(text)) r.memory = *m;
          else bad(line_of(v), str("unknown memory type '", text, "' (expected one of host, cuda)"));
        } else if (k == "cores") {
          if (auto c = parse_cores(text)) r.shared_cores = *c;
          else bad(line_of(v), str("unknown cores '", text, "' (expected shared or own)"));
        } else if (k == "reads") {
          if (auto f = parse_reads(text)) r.fast_reads = *f;
          else bad(line_of(v), str("unknown reads '", text, "' (expected fast or slow)"));
        } else {
          if (auto d = parse_datatype(text)) r.dtype = *d;
          else bad(line_of(v), str("unknown dtype '", text, "' (expected one of ", datatype_names(), ")"));
        }
      } else if (k == "params") {
        const toml::table* p = v.as_table();
        if (!p) {
          bad(line_of(v), str("params must be a table (params = { chunk_bytes = \"64K\" }), got ",
                              type_name(v)));
          continue;
        }
        for (auto&& [pk, pv] : *p) {
          std::optional<int64_t> integer;
          if (const auto* i = pv.as_integer()) integer = i->get();
          else if (!pv.is_string()) {
            bad(line_of(pv), str("params.", pk.str(), " must be a string or an integer, got ",
                                 type_name(pv)));
            continue;
          }
          const std::string name(pk.str());
          if (auto error = set_param(r.params, name, value_text(pv), integer)) {
            const bool known = std::find(std::begin(kTuningParams), std::end(kTuningParams),
                                         name) != std::end(kTuningParams);
            bad(line_of(pv), known ? "params." + *error : *error);
          }
        }
      } else {
        bad(line_of(key), str("unknown key '", k, "' (expected one of ", join(kRowKeys), ")"));
      }
    }
    if (!have_coll) bad(line, "rule has no 'collective'");
    if (!have_algo) bad(line, "rule has no 'algorithm'");
    if (!ok) return std::nullopt;
    if (auto why = check_rule(r)) {
      problem(line_of(*t.get("algorithm")), *why);
      return std::nullopt;
    }
    return r;
  }

  std::string name_;
  bool strict_;
  Problems problems_;
};

#endif  // TUTTI_HAVE_TOML

bool file_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

}  // namespace

bool TuningSection::applies_to(const JobShape& s) const {
  return ranks.contains(static_cast<uint64_t>(s.nranks)) &&
         nodes.contains(static_cast<uint64_t>(s.nnodes)) &&
         ppn.contains(static_cast<uint64_t>(s.ppn));
}

std::vector<TuningRule> TuningFile::rules_for(const JobShape& shape) const {
  std::vector<TuningRule> out;
  for (const TuningSection& s : sections)
    if (s.applies_to(shape)) out.insert(out.end(), s.rules.begin(), s.rules.end());
  return out;
}

size_t TuningFile::rule_count() const {
  size_t n = 0;
  for (const TuningSection& s : sections) n += s.rules.size();
  return n;
}

TuningFile parse_tuning_toml(std::string_view text, const std::string& name, bool strict) {
#if TUTTI_HAVE_TOML
  return TomlReader(name, strict).read(text);
#else
  (void)text;
  (void)strict;
  fail(TUTTI_ERR_UNSUPPORTED, name,
       ": this tutti was built without TOML support (install libtomlplusplus-dev and rebuild), "
       "so it cannot read tuning files; use TUTTI_TUNE instead");
#endif
}

TuningFile read_tuning_file(const std::string& path, bool strict) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    fail(TUTTI_ERR_INVALID_ARGUMENT, "cannot read tuning file '", path, "': it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(TUTTI_ERR_INVALID_ARGUMENT, "cannot read tuning file '", path, "': ", std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) fail(TUTTI_ERR_INVALID_ARGUMENT, "cannot read tuning file '", path, "'");
  return parse_tuning_toml(text.str(), path, strict);
}

TuneRules parse_tune_string(std::string_view text, bool strict) {
  constexpr std::string_view kGroupDropped = "its rules are ignored";
  TuneRules out;
  Problems problems;
  auto where = [](const std::string& item) { return str("TUTTI_TUNE '", item, "'"); };
  for (const std::string& raw_group : split(text, ';')) {
    const std::string group = trim(raw_group);
    if (group.empty()) continue;
    // COLL[filters]:entries
    size_t head_end = group.find(':');
    const size_t bracket = group.find('[');
    if (bracket != std::string::npos && (head_end == std::string::npos || bracket < head_end)) {
      const size_t close = group.find(']', bracket);
      if (close == std::string::npos) {
        problems.add(where(group), "'[' without ']'", 0, kGroupDropped);
        continue;
      }
      head_end = group.find(':', close);
    }
    if (head_end == std::string::npos) {
      problems.add(where(group),
                   "expected COLLECTIVE[:RANGE]:ALGORITHM (e.g. allreduce:0-4K:recursive_doubling)",
                   0, kGroupDropped);
      continue;
    }
    const std::string head = trim(group.substr(0, head_end));
    const size_t open = head.find('[');
    if (open != std::string::npos && head.back() != ']') {
      problems.add(where(group), str("unexpected '", head.substr(head.rfind(']') + 1),
                                     "' after the filters"), 0, kGroupDropped);
      continue;
    }
    const std::string coll_name = trim(head.substr(0, open));
    const auto coll = parse_collective(coll_name);
    if (!coll) {
      problems.add(where(group),
                   str("unknown collective '", coll_name, "' (expected one of ", collective_names(), ")"),
                   0, kGroupDropped);
      continue;
    }
    TuningRule base;
    base.coll = *coll;
    bool filters_ok = true;
    if (open != std::string::npos) {
      const std::string inside = head.substr(open + 1, head.rfind(']') - open - 1);
      for (const std::string& raw : split(inside, ',')) {
        const std::string f = trim(raw);
        const size_t eq = f.find('=');
        const std::string key = trim(f.substr(0, eq));
        const std::string value = eq == std::string::npos ? "" : trim(f.substr(eq + 1));
        std::string error;
        if (eq == std::string::npos) {
          error = str("filter '", f, "' is not KEY=VALUE (keys: ", join(kTuneFilters), ")");
        } else if (key == "ranks" || key == "nodes") {
          if (auto r = range_from_text(value, key, &error)) (key == "ranks" ? base.ranks : base.nodes) = *r;
        } else if (key == "memory") {
          if (auto m = parse_memory_type(value)) base.memory = *m;
          else error = str("unknown memory type '", value, "' (expected one of host, cuda)");
        } else if (key == "dtype") {
          if (auto d = parse_datatype(value)) base.dtype = *d;
          else error = str("unknown dtype '", value, "' (expected one of ", datatype_names(), ")");
        } else if (key == "cores") {
          if (auto c = parse_cores(value)) base.shared_cores = *c;
          else error = str("unknown cores '", value, "' (expected shared or own)");
        } else if (key == "reads") {
          if (auto f = parse_reads(value)) base.fast_reads = *f;
          else error = str("unknown reads '", value, "' (expected fast or slow)");
        } else {
          error = str("unknown filter '", key, "' (expected one of ", join(kTuneFilters), ")");
        }
        if (!error.empty()) {
          problems.add(where(group), error, 0, kGroupDropped);
          filters_ok = false;
        }
      }
    }
    if (!filters_ok) continue;
    for (const std::string& raw_entry : split(group.substr(head_end + 1), ',')) {
      const std::string entry = trim(raw_entry);
      const std::string item = str(head, ":", entry);
      TuningRule r = base;
      r.origin = where(item);
      // [RANGE:]ALGORITHM[@KEY=VALUE...]
      const size_t colon = entry.find(':');
      std::string algo_part = entry;
      std::string error;
      if (colon != std::string::npos) {
        if (auto range = range_from_text(entry.substr(0, colon), "bytes", &error)) r.bytes = *range;
        algo_part = entry.substr(colon + 1);
      }
      std::vector<std::string> pieces = split(algo_part, '@');
      r.algorithm = trim(pieces[0]);
      if (error.empty() && r.algorithm.empty()) error = "no algorithm named";
      for (size_t i = 1; i < pieces.size() && error.empty(); ++i) {
        const size_t eq = pieces[i].find('=');
        if (eq == std::string::npos) {
          error = str("parameter '", trim(pieces[i]), "' is not KEY=VALUE (keys: ",
                      join(kTuningParams), ")");
          break;
        }
        if (auto e = set_param(r.params, trim(pieces[i].substr(0, eq)), trim(pieces[i].substr(eq + 1)),
                               std::nullopt))
          error = *e;
      }
      if (error.empty())
        if (auto why = check_rule(r)) error = *why;
      if (error.empty())
        if (auto why = check_against_section(r, out.rules)) error = *why;
      if (!error.empty()) {
        problems.add(where(item), error);
        continue;
      }
      out.rules.push_back(std::move(r));
    }
  }
  problems.finish("TUTTI_TUNE", strict, out.warnings);
  return out;
}

std::optional<TuningFileLocation> find_tuning_file(const std::string& explicit_path,
                                                   const char* xdg_config_home, const char* home,
                                                   const std::string& datadir) {
  if (!explicit_path.empty()) {
    if (!file_exists(explicit_path))
      fail(TUTTI_ERR_INVALID_ARGUMENT, "TUTTI_TUNING_FILE='", explicit_path, "': no such file");
    return TuningFileLocation{explicit_path, "TUTTI_TUNING_FILE"};
  }
  // XDG: a relative XDG_CONFIG_HOME is invalid and ignored.
  if (xdg_config_home && xdg_config_home[0] == '/') {
    const std::string p = str(xdg_config_home, "/tutti/tuning.toml");
    if (file_exists(p)) return TuningFileLocation{p, "$XDG_CONFIG_HOME"};
  } else if (home && *home) {
    const std::string p = str(home, "/.config/tutti/tuning.toml");
    if (file_exists(p)) return TuningFileLocation{p, "~/.config"};
  }
  if (!datadir.empty()) {
    const std::string p = datadir + "/tuning.toml";
    if (file_exists(p)) return TuningFileLocation{p, "installed default"};
  }
  return std::nullopt;
}

std::optional<TuningFileLocation> find_tuning_file(const std::string& explicit_path) {
  return find_tuning_file(explicit_path, std::getenv("XDG_CONFIG_HOME"), std::getenv("HOME"),
                          TUTTI_DATADIR);
}

std::string UserTuning::describe() const {
  std::string out;
  if (tune_rules) out = str("TUTTI_TUNE (", tune_rules, tune_rules == 1 ? " rule)" : " rules)");
  if (file) {
    if (!out.empty()) out += " + ";
    out += str(file->path, " via ", file->how, " (");
    std::string prov;
    if (!provenance.cluster.empty()) prov += str("cluster '", provenance.cluster, "'");
    if (!provenance.generated_by.empty())
      prov += str(prov.empty() ? "" : ", ", "by ", provenance.generated_by);
    if (!provenance.date.empty()) prov += str(prov.empty() ? "" : ", ", provenance.date);
    if (!provenance.tutti_version.empty())
      prov += str(prov.empty() ? "" : ", ", "tutti ", provenance.tutti_version);
    out += str(prov, prov.empty() ? "" : "; ", file_rules, " of ", file_rules_total,
               " rules for this job)");
  }
  if (out.empty()) return "none (built-in defaults only)";
  return str(out, ", hash ", format_hash(hash));
}

UserTuning load_user_tuning(const std::string& tune, const std::string& file, bool strict,
                            const JobShape& shape) {
  UserTuning u;
  std::vector<TuningRule> rules;
  if (!tune.empty()) {
    TuneRules t = parse_tune_string(tune, strict);
    u.tune_rules = t.rules.size();
    rules = std::move(t.rules);
    u.warnings = std::move(t.warnings);
  }
  u.file = find_tuning_file(file);
  if (u.file) {
    TuningFile f = read_tuning_file(u.file->path, strict);
    std::vector<TuningRule> mine = f.rules_for(shape);
    u.provenance = f.provenance;
    u.file_rules = mine.size();
    u.file_rules_total = f.rule_count();
    rules.insert(rules.end(), mine.begin(), mine.end());
    u.warnings.insert(u.warnings.end(), f.warnings.begin(), f.warnings.end());
  }
  u.table = TuningTable(std::move(rules));
  u.hash = tuning_hash(u.table);
  return u;
}

bool algorithm_uses_param(const algos::Algorithm& algo, std::string_view param) {
  if (algo.is_mpi()) return false;
  static std::mutex mutex;
  static std::map<std::tuple<int, std::string, std::string>, bool> cache;
  const auto key = std::make_tuple(static_cast<int>(algo.coll), std::string(algo.name), std::string(param));
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  AlgoParams lo, hi;
  if (param == "chunk_bytes") {
    lo.chunk_bytes = 16 * 1024;
    hi.chunk_bytes = 1024 * 1024;
  } else if (param == "radix") {
    lo.radix = 2;
    hi.radix = 4;
  } else {
    return false;
  }
  // A 4 MiB message is several chunks of either size (64 KiB: for the
  // algorithms that refuse large messages); a parameter that changes no
  // rank's schedule on any of these rank counts is not used.
  bool uses = false;
  for (const uint64_t bytes : {uint64_t{4} << 20, uint64_t{64} << 10}) {
    for (int p : {2, 3, 4, 8}) {
      if (uses) break;
      CollArgs a;
      a.coll = algo.coll;
      a.dtype = Datatype::Float32;
      a.op = Op::Sum;
      a.count = count_for_message_bytes(algo.coll, bytes, a.dtype, p);
      const std::vector<size_t> counts(static_cast<size_t>(p), a.count ? a.count : 1 << 18);
      std::vector<size_t> displs(static_cast<size_t>(p));
      for (int i = 0; i < p; ++i) displs[static_cast<size_t>(i)] = counts[0] * static_cast<size_t>(i);
      if (a.coll == Collective::Alltoallv) {
        a.send_counts = a.recv_counts = counts;
        a.send_displs = a.recv_displs = displs;
      }
      // A shared segment too, so that shared-memory algorithms accept.
      Topology topo = Topology::single_node(p, size_t{64} << 20);
      topo.peer_reads = true;
      CollArgs a_lo = a, a_hi = a;
      a_lo.params = lo;
      a_hi.params = hi;
      const bool refuses_lo = algo.refuse(a_lo, topo).has_value();
      const bool refuses_hi = algo.refuse(a_hi, topo).has_value();
      if (refuses_lo != refuses_hi) {
        uses = true;
        break;
      }
      if (refuses_lo) continue;
      for (int rank : {0, 1, p - 1}) {
        try {
          ScheduleBuilder b_lo(a_lo, rank, topo), b_hi(a_hi, rank, topo);
          algo.build(b_lo);
          algo.build(b_hi);
          const Schedule s_lo = b_lo.finish(), s_hi = b_hi.finish();
          if (s_lo.steps.size() != s_hi.steps.size() || s_lo.rounds.size() != s_hi.rounds.size() ||
              s_lo.scratch_bytes != s_hi.scratch_bytes) {
            uses = true;
            break;
          }
        } catch (const std::exception&) {
          // A builder that cannot build this shape says nothing either way.
        }
      }
    }
  }
  std::lock_guard<std::mutex> lock(mutex);
  cache[key] = uses;
  return uses;
}

}  // namespace tutti
