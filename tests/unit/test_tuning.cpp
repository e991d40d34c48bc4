// Tuning tables: size ranges, the TOML file format (a complete valid file
// against its golden listing, and every error case against its golden
// messages, strict and not), the TUTTI_TUNE grammar, file lookup, sections
// matched on the job's shape, the table hash, the dispatcher obeying a
// user table before the built-in defaults, and tutti-tune's merging and
// writing (written files load back into the same rules).
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <functional>
#include <optional>
#include <fstream>
#include <sstream>

#include "base/status.hpp"
#include "tuning/dispatch.hpp"
#include "tuning/file.hpp"
#include "tuning/write.hpp"

namespace fs = std::filesystem;

namespace tutti {
namespace {

// tests/unit/data/tuning. Meson compiles from the build directory, so a
// relative __FILE__ is relative to it (the binary is <build>/tests/unit/).
fs::path data_dir() {
  fs::path src = __FILE__;
  if (src.is_relative()) {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    src = fs::exists(src) ? fs::absolute(src) : exe.parent_path().parent_path().parent_path() / src;
  }
  return src.parent_path() / "data" / "tuning";
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// Algorithm lists in messages come from the registry, which grows: tests
// compare them as "<registry>".
std::string normalize(std::string text) {
  auto replace_all = [&text](const std::string& from, const std::string& to) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
  };
  for (Collective c : kAllCollectives) {
    const std::string coll(collective_name(c));
    replace_all(str(coll, " algorithms: ", algos::algorithm_names(c), ")"),
                str(coll, " algorithms: <registry>)"));
    for (std::string_view param : kTuningParams) {
      std::string users;
      for (const algos::Algorithm* a : algos::algorithms_for(c))
        if (algorithm_uses_param(*a, param)) users += str(users.empty() ? "" : ", ", a->name);
      replace_all(str(coll, " algorithms that do: ", users.empty() ? "none" : users, ")"),
                  str(coll, " algorithms that do: <registry>)"));
    }
  }
  return text;
}

// Golden files are compared exactly (after normalize()); TUTTI_REGENERATE_GOLDEN=1 rewrites them
// (review the diff before committing it).
void check_golden(const fs::path& path, const std::string& raw) {
  const std::string got = normalize(raw);
  if (std::getenv("TUTTI_REGENERATE_GOLDEN")) {
    std::ofstream(path) << got;
    WARN("regenerated " << path.string());
    return;
  }
  INFO("golden file " << path.string());
  REQUIRE(fs::exists(path));
  CHECK(got == read_text(path));
}

std::string listing(const TuningFile& f) {
  std::string out = str("provenance: cluster=", f.provenance.cluster, " generated_by=",
                        f.provenance.generated_by, " date=", f.provenance.date,
                        " tutti_version=", f.provenance.tutti_version, "\n");
  for (const TuningSection& s : f.sections) {
    out += str("section '", s.name, "' at ", s.origin, ": ranks=", format_range(s.ranks),
               " nodes=", format_range(s.nodes), " ppn=", format_range(s.ppn), "\n");
    for (const TuningRule& r : s.rules) out += str("  ", r.origin, ": ", rule_to_string(r), "\n");
  }
  return out;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

CollArgs call(Collective c, uint64_t bytes, int nranks, Datatype dt = Datatype::Float32) {
  CollArgs a;
  a.coll = c;
  a.dtype = dt;
  a.count = count_for_message_bytes(c, bytes, dt, nranks);
  return a;
}

struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string n, const std::optional<std::string>& value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) old = v;
    if (value) setenv(name.c_str(), value->c_str(), 1);
    else unsetenv(name.c_str());
  }
  ~ScopedEnv() {
    if (old) setenv(name.c_str(), old->c_str(), 1);
    else unsetenv(name.c_str());
  }
};

// A fresh directory under /tmp, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/tutti-tuning-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path write(const std::string& rel, const std::string& text) const {
    const fs::path p = path / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p;
  }
};

}  // namespace

TEST_CASE("size ranges parse with K/M/G suffixes and reject nonsense", "[tuning]") {
  CHECK(parse_range("0-8K") == ValueRange{0, 8192});
  CHECK(parse_range("8K-1M") == ValueRange{8192, 1 << 20});
  CHECK(parse_range("1M-") == ValueRange{1 << 20, ValueRange{}.hi});
  CHECK(parse_range("-4K") == ValueRange{0, 4096});
  CHECK(parse_range("4") == ValueRange{4, 5});
  CHECK(parse_range(" 2G - ") == ValueRange{uint64_t{2} << 30, ValueRange{}.hi});
  CHECK(parse_range("64KB-1mb") == ValueRange{65536, 1 << 20});
  CHECK(format_range(parse_range("8K-1M")) == "8K-1M");
  CHECK(format_range(parse_range("1M-")) == "1M-");
  CHECK(format_range(parse_range("4")) == "4");
  CHECK(format_range({4092, 65532}) == "4092-65532");
  CHECK(error_of([] { parse_range("8K-4K"); }) ==
        "bad range '8K-4K': the upper end must exceed the lower");
  CHECK(error_of([] { parse_range("4X"); }) == "bad range '4X': unknown suffix in '4X' (K, M or G)");
  CHECK(error_of([] { parse_range("a-b"); }) == "bad range 'a-b': 'a' is not a number");
  CHECK(error_of([] { parse_range("4K5"); }) == "bad range '4K5': trailing '5'");
  CHECK(error_of([] { parse_range("99999999999999999999"); }) ==
        "bad range '99999999999999999999': number too large");
  CHECK(error_of([] { parse_range(""); }) == "bad range '': '' is not a number");
}

TEST_CASE("a complete tuning file loads into exactly its golden rules", "[tuning]") {
  const fs::path dir = data_dir();
  const TuningFile f = parse_tuning_toml(read_text(dir / "valid.toml"), "valid.toml", true);
  CHECK(f.warnings.empty());
  CHECK(f.rule_count() == 10);
  check_golden(dir / "valid.expected", listing(f));

  // Sections apply by job shape; top-level rules to every job, last.
  auto algos_for = [&](JobShape shape) {
    std::string out;
    for (const TuningRule& r : f.rules_for(shape)) out += str(out.empty() ? "" : " ", r.algorithm);
    return out;
  };
  CHECK(algos_for({4, 1, 4}) ==
        "recursive_doubling recursive_halving ring recursive_halving ring linear mpi");
  CHECK(algos_for({16, 1, 16}) == "recursive_halving ring linear mpi");  // ppn 16 > 8
  CHECK(algos_for({128, 4, 32}) == "tree scatter_allgather ring recursive_halving ring linear mpi");
}

TEST_CASE("every error case in a tuning file is reported with file, line and value", "[tuning]") {
  const fs::path dir = data_dir() / "errors";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".toml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 16);
  for (const fs::path& file : files) {
    SECTION(file.filename().string()) {
      const std::string name = "errors/" + file.filename().string();
      const std::string text = read_text(file);
      // Strict: one exception listing every problem.
      std::string golden = "strict:\n" + error_of([&] { parse_tuning_toml(text, name, true); }) + "\n";
      // Not strict: the same problems as warnings; the other rules load.
      try {
        const TuningFile f = parse_tuning_toml(text, name, false);
        golden += str("not strict: ", f.rule_count(), " rule(s) left\n");
        for (const std::string& w : f.warnings) golden += w + "\n";
        CHECK_FALSE(f.warnings.empty());
      } catch (const Error& e) {
        golden += str("not strict: throws\n", e.what(), "\n");
      }
      fs::path expected = file;
      check_golden(expected.replace_extension(".expected"), golden);
    }
  }
}

TEST_CASE("strict errors name every problem, in line order", "[tuning]") {
  const std::string text = R"([[rule]]
collective = "allreduce"
algorithm = "ring"
chunk = 4

[[rule]]
collective = "bcast"
algorithm = "rng"
)";
  const std::string e = error_of([&] { parse_tuning_toml(text, "t.toml", true); });
  CHECK(e.rfind("t.toml: 2 errors (TUTTI_TUNING_STRICT=0", 0) == 0);
  const size_t first = e.find("\n  t.toml:4: unknown key 'chunk'");
  const size_t second = e.find("\n  t.toml:8: unknown algorithm 'rng' (bcast algorithms: tree, ");
  CHECK(first != std::string::npos);
  CHECK(second != std::string::npos);
  CHECK(first < second);
}

TEST_CASE("a file's cores key: shared or own, and nothing else", "[tuning]") {
  const TuningFile f = parse_tuning_toml(
      "[[rule]]\ncollective = \"barrier\"\ncores = \"shared\"\nalgorithm = \"leader_shm\"\n"
      "[[rule]]\ncollective = \"barrier\"\ncores = \"own\"\nalgorithm = \"shm\"\n",
      "c.toml", true);
  REQUIRE(f.rule_count() == 2);
  const std::vector<TuningRule> rules = f.rules_for({4, 1, 4});
  REQUIRE(rules.size() == 2);
  CHECK(rule_to_string(rules[0]) == "barrier bytes=0- cores=shared -> leader_shm");
  CHECK(rule_to_string(rules[1]) == "barrier bytes=0- cores=own -> shm");
  CHECK(error_of([] {
          parse_tuning_toml("[[rule]]\ncollective = \"barrier\"\ncores = \"many\"\n"
                            "algorithm = \"shm\"\n",
                            "c.toml", true);
        }).find("c.toml:3: unknown cores 'many' (expected shared or own)") != std::string::npos);
}

TEST_CASE("a rule's reads key: fast or slow, matched against the creation's probe", "[tuning]") {
  const TuningFile f = parse_tuning_toml(
      "[[rule]]\ncollective = \"bcast\"\nbytes = \"16K-1M\"\nreads = \"fast\"\n"
      "algorithm = \"cma\"\n"
      "[[rule]]\ncollective = \"bcast\"\nbytes = \"16K-1M\"\nreads = \"slow\"\n"
      "algorithm = \"shm\"\n",
      "r.toml", true);
  const std::vector<TuningRule> rules = f.rules_for({2, 1, 2});
  REQUIRE(rules.size() == 2);
  CHECK(rule_to_string(rules[0]) == "bcast bytes=16K-1M reads=fast -> cma");
  CHECK(rule_to_string(rules[1]) == "bcast bytes=16K-1M reads=slow -> shm");
  CallShape shape{Collective::Bcast, 64 << 10, 2, 1, MemoryType::Host, Datatype::Float32};
  CHECK(shape.fast_reads);  // nothing probed: reads count as fast
  CHECK(rule_matches(rules[0], shape));
  CHECK_FALSE(rule_matches(rules[1], shape));
  shape.fast_reads = false;
  CHECK_FALSE(rule_matches(rules[0], shape));
  CHECK(rule_matches(rules[1], shape));
  // The compact form takes it as a filter; a bad value names both words.
  const TuneRules t = parse_tune_string("bcast[reads=slow]:16K-1M:shm", true);
  REQUIRE(t.rules.size() == 1);
  CHECK(rule_to_string(t.rules[0]) == "bcast bytes=16K-1M reads=slow -> shm");
  CHECK(error_of([] { parse_tune_string("bcast[reads=quick]:0-:shm", true); })
            .find("unknown reads 'quick' (expected fast or slow)") != std::string::npos);
  CHECK(error_of([] {
          parse_tuning_toml("[[rule]]\ncollective = \"bcast\"\nreads = \"1\"\nalgorithm = \"shm\"\n",
                            "r.toml", true);
        }).find("r.toml:3: unknown reads '1' (expected fast or slow)") != std::string::npos);
}

TEST_CASE("a rule's alternative: a tutti algorithm the dispatcher offers TUTTI_FOLLOW_STATE",
          "[tuning]") {
  const TuningFile f = parse_tuning_toml(
      "[[rule]]\ncollective = \"allgather\"\nbytes = \"1M-\"\nalgorithm = \"shm\"\n"
      "params = { chunk_bytes = \"256K\" }\nalternative = \"cma\"\n",
      "a.toml", true);
  const std::vector<TuningRule> rules = f.rules_for({2, 1, 2});
  REQUIRE(rules.size() == 1);
  CHECK(rule_to_string(rules[0]) ==
        "allgather bytes=1M- -> shm chunk_bytes=256K or cma (TUTTI_FOLLOW_STATE)");
  // The decision carries it where it would run the call; elsewhere not.
  Dispatcher one_node(TuningTable(rules), Topology::single_node(2, 1 << 20));
  one_node.set_peer_reads(true);  // cma may run
  Decision dec = one_node.select(call(Collective::Allgather, 2 << 20, 2), "", "");
  CHECK(dec.algorithm->name == "shm");
  REQUIRE(dec.alternative != nullptr);
  CHECK(dec.alternative->name == "cma");
  const Topology two_nodes{2, 2, 1, {0, 1}, 1 << 20};  // cma refuses across nodes
  dec = Dispatcher(TuningTable(rules), two_nodes).select(call(Collective::Allgather, 2 << 20, 2), "",
                                                          "");
  CHECK(dec.alternative == nullptr);
  // Forced algorithms have none.
  dec = one_node.select(call(Collective::Allgather, 2 << 20, 2), "ring", "forced");
  CHECK(dec.alternative == nullptr);
  // An unknown alternative, or the rule's own algorithm, is an error.
  CHECK(error_of([] {
          parse_tuning_toml("[[rule]]\ncollective = \"allgather\"\nalgorithm = \"shm\"\n"
                            "alternative = \"fast\"\n",
                            "a.toml", true);
        }).find("a.toml:3: unknown alternative 'fast' (allgather algorithms: ") != std::string::npos);
  CHECK(error_of([] {
          parse_tuning_toml("[[rule]]\ncollective = \"allgather\"\nalgorithm = \"shm\"\n"
                            "alternative = \"shm\"\n",
                            "a.toml", true);
        }).find("alternative 'shm' is the rule's own algorithm") != std::string::npos);
  // The built-in table names some (2 ranks on one node).
  Dispatcher builtin(TuningTable(std::vector<TuningRule>{}), Topology::single_node(2, 1 << 20));
  builtin.set_peer_reads(true);
  dec = builtin.select(call(Collective::Alltoall, 1 << 20, 2), "", "");
  CHECK(dec.algorithm->name == "shm");
  REQUIRE(dec.alternative != nullptr);
  CHECK(dec.alternative->name == "cma");
}

TEST_CASE("TUTTI_TUNE: the compact grammar", "[tuning]") {
  SECTION("rules, ranges, filters and parameters") {
    const TuneRules t = parse_tune_string(
        "allreduce:0-4K:recursive_doubling,4K-:ring@chunk_bytes=1M; bcast:0-:tree ;"
        "allgather[ranks=8-,memory=host,dtype=float32]:ring;reduce:64K-:tree@chunk_bytes=65536;"
        "barrier[cores=shared]:0-:leader_shm",
        true);
    REQUIRE(t.rules.size() == 6);
    CHECK(t.warnings.empty());
    CHECK(rule_to_string(t.rules[0]) == "allreduce bytes=0-4K -> recursive_doubling");
    CHECK(rule_to_string(t.rules[1]) == "allreduce bytes=4K- -> ring chunk_bytes=1M");
    CHECK(rule_to_string(t.rules[2]) == "bcast bytes=0- -> tree");
    CHECK(rule_to_string(t.rules[3]) ==
          "allgather bytes=0- ranks=8- memory=host dtype=float32 -> ring");
    CHECK(rule_to_string(t.rules[4]) == "reduce bytes=64K- -> tree chunk_bytes=64K");
    CHECK(rule_to_string(t.rules[5]) == "barrier bytes=0- cores=shared -> leader_shm");
    // cores=shared matches only where ranks share cores.
    CallShape shape{Collective::Barrier, 0, 4, 1, MemoryType::Host, Datatype::Float32};
    CHECK_FALSE(rule_matches(t.rules[5], shape));
    shape.shared_cores = true;
    CHECK(rule_matches(t.rules[5], shape));
    CHECK(t.rules[0].origin == "TUTTI_TUNE 'allreduce:0-4K:recursive_doubling'");
    CHECK(t.rules[1].origin == "TUTTI_TUNE 'allreduce:4K-:ring@chunk_bytes=1M'");
    CHECK(t.rules[3].origin == "TUTTI_TUNE 'allgather[ranks=8-,memory=host,dtype=float32]:ring'");
  }
  SECTION("empty groups are ignored") { CHECK(parse_tune_string(" ; ;", true).rules.empty()); }

  SECTION("every error, with its message") {
    const std::pair<const char*, const char*> cases[] = {
        {"allreduce", "TUTTI_TUNE 'allreduce': expected COLLECTIVE[:RANGE]:ALGORITHM (e.g. "
                      "allreduce:0-4K:recursive_doubling)"},
        {"allreduc:0-:ring",
         "TUTTI_TUNE 'allreduc:0-:ring': unknown collective 'allreduc' (expected one of allreduce, "
         "reduce, bcast, allgather, reduce_scatter, gather, scatter, alltoall, alltoallv, barrier)"},
        {"allreduce:0-:rng",
         "TUTTI_TUNE 'allreduce:0-:rng': unknown algorithm 'rng' (allreduce algorithms: <registry>)"},
        {"allreduce:0-:bruck",
         "TUTTI_TUNE 'allreduce:0-:bruck': algorithm 'bruck' does not support allreduce (it runs "
         "allgather, alltoall; allreduce algorithms: <registry>)"},
        {"allreduce:8K-4K:ring",
         "TUTTI_TUNE 'allreduce:8K-4K:ring': bytes: bad range '8K-4K': the upper end must exceed "
         "the lower"},
        {"allreduce:0-8K:ring,4K-:tree",
         "TUTTI_TUNE 'allreduce:4K-:tree': allreduce bytes '4K-' overlaps the rule at TUTTI_TUNE "
         "'allreduce:0-8K:ring' (allreduce bytes=0-8K -> ring): a call would match both; make the "
         "ranges of a section disjoint"},
        {"allreduce:8K-:ring,0-8K:tree",
         "TUTTI_TUNE 'allreduce:0-8K:tree': allreduce bytes '0-8K' is out of order: it comes after "
         "the rule at TUTTI_TUNE 'allreduce:8K-:ring' (bytes '8K-'); sort the rules of a section "
         "by size"},
        {"allreduce:0-:ring@chunk=4K",
         "TUTTI_TUNE 'allreduce:0-:ring@chunk=4K': unknown parameter 'chunk' (expected one of "
         "chunk_bytes, radix)"},
        {"allreduce:0-:ring@chunk_bytes",
         "TUTTI_TUNE 'allreduce:0-:ring@chunk_bytes': parameter 'chunk_bytes' is not KEY=VALUE "
         "(keys: chunk_bytes, radix)"},
        {"allreduce:0-:ring@chunk_bytes=1",
         "TUTTI_TUNE 'allreduce:0-:ring@chunk_bytes=1': chunk_bytes: '1' is outside [256, 1G]"},
        {"allreduce:0-:ring@radix=4",
         "TUTTI_TUNE 'allreduce:0-:ring@radix=4': allreduce algorithm 'ring' does not use radix "
         "(allreduce algorithms that do: <registry>)"},
        {"allreduce:0-:ring@radix=x",
         "TUTTI_TUNE 'allreduce:0-:ring@radix=x': radix: 'x' is not an integer"},
        {"allreduce:0-:", "TUTTI_TUNE 'allreduce:0-:': no algorithm named"},
        {"allreduce[ranks=4:0-:ring",
         "TUTTI_TUNE 'allreduce[ranks=4:0-:ring': '[' without ']'"},
        {"allreduce[gpus=4]:0-:ring",
         "TUTTI_TUNE 'allreduce[gpus=4]:0-:ring': unknown filter 'gpus' (expected one of ranks, "
         "nodes, memory, dtype, cores, reads)"},
        {"allreduce[cores=4]:0-:ring",
         "TUTTI_TUNE 'allreduce[cores=4]:0-:ring': unknown cores '4' (expected shared or own)"},
        {"allreduce[memory=gpu]:0-:ring",
         "TUTTI_TUNE 'allreduce[memory=gpu]:0-:ring': unknown memory type 'gpu' (expected one of "
         "host, cuda)"},
        {"allreduce[dtype=f32]:0-:ring",
         "TUTTI_TUNE 'allreduce[dtype=f32]:0-:ring': unknown dtype 'f32' (expected one of int8, "
         "uint8, int32, uint32, int64, uint64, float16, bfloat16, float32, float64)"},
        {"allreduce[ranks=4]x:0-:ring",
         "TUTTI_TUNE 'allreduce[ranks=4]x:0-:ring': unexpected 'x' after the filters"},
        {"allreduce[ranks]:0-:ring",
         "TUTTI_TUNE 'allreduce[ranks]:0-:ring': filter 'ranks' is not KEY=VALUE (keys: ranks, "
         "nodes, memory, dtype, cores, reads)"},
        {"alltoallv:4K-:pairwise",
         "TUTTI_TUNE 'alltoallv:4K-:pairwise': alltoallv rules on one node are matched at size 0 "
         "(sizes differ between ranks; they agree on one only across nodes), so bytes '4K-' never "
         "matches there; add nodes=2- or use \"0-\""},
    };
    for (const auto& c : cases) {
      const std::string text = c.first, message = c.second;  // lambdas cannot capture bindings in clang 14
      INFO("TUTTI_TUNE=" << text);
      const std::string e = normalize(error_of([&] { parse_tune_string(text, true); }));
      CHECK(e == str("TUTTI_TUNE: 1 error (TUTTI_TUNING_STRICT=0 turns them into warnings that "
                     "disable the offending rules)\n  ",
                     message));
      // Not strict: a warning that says what was dropped.
      const TuneRules lenient = parse_tune_string(text, false);
      REQUIRE(lenient.warnings.size() == 1);
      CHECK(normalize(lenient.warnings[0]).rfind(message, 0) == 0);
    }
  }

  SECTION("not strict: the bad rule is dropped, the others kept") {
    const TuneRules t = parse_tune_string("allreduce:0-4K:rng,4K-:ring;bcast:0-:tree", false);
    REQUIRE(t.rules.size() == 2);
    CHECK(t.rules[0].algorithm == "ring");
    CHECK(t.rules[1].algorithm == "tree");
    REQUIRE(t.warnings.size() == 1);
    CHECK(normalize(t.warnings[0]) ==
          "TUTTI_TUNE 'allreduce:0-4K:rng': unknown algorithm 'rng' (allreduce algorithms: "
          "<registry>); the rule is ignored");
  }
}

TEST_CASE("the tuning file is found by TUTTI_TUNING_FILE, then XDG, then the data dir", "[tuning]") {
  TempDir t;
  const std::string rule = "[[rule]]\ncollective = \"allreduce\"\nalgorithm = \"ring\"\n";
  const fs::path xdg_file = t.write("xdg/tutti/tuning.toml", rule);
  const fs::path home_file = t.write("home/.config/tutti/tuning.toml", rule);
  const fs::path data_file = t.write("share/tutti/tuning.toml", rule);
  const fs::path explicit_file = t.write("mine.toml", rule);
  const std::string xdg = (t.path / "xdg").string(), home = (t.path / "home").string(),
                    data = (t.path / "share/tutti").string();

  auto found = find_tuning_file(explicit_file.string(), xdg.c_str(), home.c_str(), data);
  REQUIRE(found);
  CHECK(found->path == explicit_file.string());
  CHECK(found->how == "TUTTI_TUNING_FILE");

  found = find_tuning_file("", xdg.c_str(), home.c_str(), data);
  REQUIRE(found);
  CHECK(found->path == xdg_file.string());
  CHECK(found->how == "$XDG_CONFIG_HOME");

  // No XDG_CONFIG_HOME (or a relative one, which XDG says to ignore): ~/.config.
  for (const char* unset_xdg : {static_cast<const char*>(nullptr), "relative/dir"}) {
    found = find_tuning_file("", unset_xdg, home.c_str(), data);
    REQUIRE(found);
    CHECK(found->path == home_file.string());
    CHECK(found->how == "~/.config");
  }

  // XDG_CONFIG_HOME set but without the file: the installed default.
  found = find_tuning_file("", (t.path / "empty").c_str(), home.c_str(), data);
  REQUIRE(found);
  CHECK(found->path == data_file.string());
  CHECK(found->how == "installed default");

  CHECK_FALSE(find_tuning_file("", (t.path / "empty").c_str(), nullptr, (t.path / "none").string()));

  CHECK(error_of([&] {
          find_tuning_file((t.path / "missing.toml").string(), xdg.c_str(), home.c_str(), data);
        }) == str("TUTTI_TUNING_FILE='", (t.path / "missing.toml").string(), "': no such file"));
  CHECK(error_of([&] { read_tuning_file((t.path / "share").string(), true); })
            == str("cannot read tuning file '", (t.path / "share").string(), "': it is a directory"));
}

TEST_CASE("load_user_tuning: TUTTI_TUNE first, then the file's rules for this job", "[tuning]") {
  TempDir t;
  const fs::path file = t.write("t.toml", R"([tutti]
cluster = "c1"
generated_by = "test"
date = 2025-01-02
tutti_version = "0.1.0"

[[section]]
ranks = "4"
[[section.rule]]
collective = "allreduce"
algorithm = "tree"

[[rule]]
collective = "bcast"
algorithm = "ring"
)");
  const std::string path = file.string();
  const UserTuning four = load_user_tuning("allreduce:0-1K:ring", path, true, {4, 1, 4});
  REQUIRE(four.table.rules().size() == 3);
  CHECK(four.table.rules()[0].origin == "TUTTI_TUNE 'allreduce:0-1K:ring'");
  CHECK(four.table.rules()[1].origin == path + ":9");
  CHECK(four.table.rules()[2].origin == path + ":13");
  CHECK(four.tune_rules == 1);
  CHECK(four.file_rules == 2);
  CHECK(four.file_rules_total == 2);
  CHECK(four.provenance.cluster == "c1");
  CHECK(four.provenance.date == "2025-01-02");
  CHECK(four.describe() ==
        str("TUTTI_TUNE (1 rule) + ", path,
            " via TUTTI_TUNING_FILE (cluster 'c1', by test, 2025-01-02, tutti 0.1.0; 2 of 2 rules "
            "for this job), hash ",
            format_hash(four.hash)));

  const UserTuning eight = load_user_tuning("", path, true, {8, 1, 8});
  REQUIRE(eight.table.rules().size() == 1);  // the section is for 4 ranks
  CHECK(eight.table.rules()[0].algorithm == "ring");
  CHECK(eight.file_rules == 1);

  // Nothing set, nothing found: empty, and says so.
  ScopedEnv xdg("XDG_CONFIG_HOME", (t.path / "nothing").string());
  const UserTuning none = load_user_tuning("", "", true, {2, 1, 2});
  if (!none.file) {  // (an installed default would be found, legitimately)
    CHECK(none.table.empty());
    CHECK(none.describe() == "none (built-in defaults only)");
  }

  // Errors: strict throws, not strict warns and drops.
  CHECK_THROWS_AS(load_user_tuning("allreduce:0-:nope", "", true, {2, 1, 2}), Error);
  const UserTuning lenient = load_user_tuning("allreduce:0-:nope;bcast:0-:tree", "", false, {2, 1, 2});
  CHECK(lenient.table.rules().size() == 1);
  CHECK(lenient.warnings.size() == 1);
}

TEST_CASE("the table hash depends on the rules, not on where they were read", "[tuning]") {
  TempDir t;
  const std::string text = "[[rule]]\ncollective = \"allreduce\"\nalgorithm = \"ring\"\n";
  const fs::path a = t.write("a/tuning.toml", text), b = t.write("b/other.toml", "\n\n" + text);
  const uint64_t ha = load_user_tuning("", a.string(), true, {2, 1, 2}).hash;
  CHECK(ha == load_user_tuning("", b.string(), true, {2, 1, 2}).hash);
  CHECK(ha == load_user_tuning("allreduce:0-:ring", "", true, {2, 1, 2}).hash);
  CHECK(ha != load_user_tuning("allreduce:0-:tree", "", true, {2, 1, 2}).hash);
  CHECK(ha != load_user_tuning("allreduce:0-:ring@chunk_bytes=64K", "", true, {2, 1, 2}).hash);
  CHECK(ha != load_user_tuning("allreduce:0-1M:ring", "", true, {2, 1, 2}).hash);
  CHECK(format_hash(0x0123456789abcdefull) == "0x0123456789abcdef");
}

TEST_CASE("the dispatcher obeys a user table, and the defaults where no rule matches", "[tuning]") {
  const TuneRules user = parse_tune_string(
      "allreduce:0-4K:tree,4K-64K:ring@chunk_bytes=16K,64K-1M:mpi;bcast[ranks=8-]:0-:ring", true);
  const Dispatcher d4(TuningTable(user.rules), Topology::single_node(4));

  Decision dec = d4.select(call(Collective::Allreduce, 1024, 4), "", "");
  CHECK(dec.algorithm->name == "tree");
  CHECK(dec.reason == "rule TUTTI_TUNE 'allreduce:0-4K:tree'");
  CHECK_FALSE(dec.fell_back());

  dec = d4.select(call(Collective::Allreduce, 8192, 4), "", "");
  CHECK(dec.algorithm->name == "ring");
  CHECK(dec.params.chunk_bytes == 16384);

  dec = d4.select(call(Collective::Allreduce, 128 << 10, 4), "", "");
  CHECK(dec.algorithm->is_mpi());

  // No user rule for 4 MiB: the built-in default.
  dec = d4.select(call(Collective::Allreduce, 4 << 20, 4), "", "");
  CHECK(dec.algorithm->name == "ring");
  CHECK(dec.reason == "rule built-in");
  CHECK(dec.params.chunk_bytes == 0);

  // The bcast rule is for 8+ ranks.
  dec = d4.select(call(Collective::Bcast, 1024, 4), "", "");
  CHECK(dec.reason == "rule built-in");
  const Dispatcher d8(TuningTable(user.rules), Topology::single_node(8));
  dec = d8.select(call(Collective::Bcast, 1024, 8), "", "");
  CHECK(dec.algorithm->name == "ring");

  // TUTTI_ALGO_<COLL> (forced) wins over every rule.
  dec = d4.select(call(Collective::Allreduce, 1024, 4), "recursive_doubling", "forced by TUTTI_ALGO_ALLREDUCE");
  CHECK(dec.algorithm->name == "recursive_doubling");
  CHECK(dec.reason == "forced by TUTTI_ALGO_ALLREDUCE");

  // A rule whose algorithm refuses the call falls through, recorded, to the
  // next candidate (here: mpi cannot count beyond INT_MAX).
  CollArgs huge = call(Collective::Allreduce, 0, 4, Datatype::Int8);
  huge.count = size_t{3} << 30;
  const TuneRules mpi_rule = parse_tune_string("allreduce:0-:mpi", true);
  const Topology two_nodes{4, 2, 2, {0, 0, 1, 1}, 1 << 20};  // no one-node rules apply
  dec = Dispatcher(TuningTable(mpi_rule.rules), two_nodes).select(huge, "", "");
  CHECK(dec.algorithm->name == "hierarchical_shm_overlap");
  REQUIRE(dec.refused.size() == 1);
  CHECK(dec.refused[0].algorithm == "mpi");
  CHECK(dec.refused[0].origin == "rule TUTTI_TUNE 'allreduce:0-:mpi'");
  CHECK(dec.refused[0].why == "count 3221225472 exceeds MPI's int range");
  CHECK(dec.fell_back());
}

TEST_CASE("one-node bcast goes through the segment at every size, reads fast or slow", "[tuning]") {
  for (int p : {2, 3, 4}) {
    for (bool fast : {true, false}) {
      Dispatcher d(TuningTable(std::vector<TuningRule>{}), Topology::single_node(p, 1 << 20));
      d.set_peer_reads(true);
      d.set_fast_reads(fast);
      auto picks = [&](uint64_t bytes) {
        return std::string(d.select(call(Collective::Bcast, bytes, p), "", "").algorithm->name);
      };
      INFO(p << " ranks, reads " << (fast ? "fast" : "slow"));
      for (uint64_t bytes : {8ull << 10, 16ull << 10, 64ull << 10, 1ull << 20, 2ull << 20, 64ull << 20})
        CHECK(picks(bytes) == "shm");
    }
  }
}

TEST_CASE("where the creation's probe found peer reads slow, 2 ranks keep 16 KiB and up in the segment",
          "[tuning]") {
  Dispatcher d(TuningTable(std::vector<TuningRule>{}), Topology::single_node(2, 1 << 20));
  d.set_peer_reads(true);
  auto picks = [&](Collective c, uint64_t bytes) {
    return std::string(d.select(call(c, bytes, 2), "", "").algorithm->name);
  };
  // {collective, a mid size, the largest size that fast reads give cma}:
  // slow reads move both from cma to the segment.
  const std::tuple<Collective, uint64_t, uint64_t> cases[] = {
      {Collective::Allreduce, 64 << 10, (1 << 20) - 4},
      {Collective::Allgather, 64 << 10, (512 << 10) - 1},
      {Collective::Alltoall, 128 << 10, (512 << 10) - 1}};
  for (const auto& [c, mid, large] : cases) {
    INFO(collective_name(c) << " " << mid << " B and " << large << " B");
    d.set_fast_reads(true);
    CHECK(picks(c, mid) == "cma");
    CHECK(picks(c, large) == "cma");
    d.set_fast_reads(false);
    CHECK(picks(c, mid) == "shm");
    CHECK(picks(c, large) == "shm");
  }
  // From 1 MiB allreduce takes the segment whatever the reads: a
  // reduce-scatter and an allgather through it up to 8 MiB.
  for (bool fast : {true, false}) {
    d.set_fast_reads(fast);
    CHECK(picks(Collective::Allreduce, 1 << 20) == "hierarchical_shm");
    CHECK(picks(Collective::Allreduce, 4 << 20) == "hierarchical_shm");
    CHECK(picks(Collective::Allreduce, (8 << 20) - 4) == "hierarchical_shm");
    CHECK(picks(Collective::Allreduce, 8 << 20) == "shm");
    CHECK(picks(Collective::Allreduce, 64 << 20) == "shm");
  }
  // The segment either way: bcast, reduce, gather and scatter below 1 MiB
  // (2026-11-30's measurements), allgather and alltoall below 64 KiB and
  // from 512 KiB.
  const std::pair<Collective, uint64_t> segment_either_way[] = {
      {Collective::Bcast, 8 << 10},      {Collective::Bcast, 128 << 10},
      {Collective::Reduce, 16 << 10},    {Collective::Reduce, 512 << 10},
      {Collective::Gather, 256 << 10},   {Collective::Gather, 4 << 20},
      {Collective::Scatter, 128 << 10},  {Collective::Scatter, 512 << 10},
      {Collective::Allgather, 32 << 10}, {Collective::Allgather, 512 << 10},
      {Collective::Alltoall, 16 << 10},  {Collective::Alltoall, 4 << 20}};
  for (const auto& [c, bytes] : segment_either_way) {
    INFO(collective_name(c) << " " << bytes << " B");
    for (bool fast : {true, false}) {
      d.set_fast_reads(fast);
      CHECK(picks(c, bytes) == "shm");
    }
  }
  // bcast in chunks of about a quarter of the vector up to 512 KiB
  // (pipelined copies), then in 128 KiB chunks up to 4 MiB.
  auto chunk = [&](Collective c, uint64_t bytes) {
    return d.select(call(c, bytes, 2), "", "").params.chunk_bytes;
  };
  CHECK(chunk(Collective::Bcast, 128 << 10) == (32u << 10));
  CHECK(chunk(Collective::Bcast, (512 << 10) - 4) == (64u << 10));
  CHECK(chunk(Collective::Bcast, 512 << 10) == (128u << 10));
  CHECK(chunk(Collective::Bcast, 2 << 20) == (128u << 10));
  CHECK(chunk(Collective::Bcast, 8 << 20) == (1u << 20));
  CHECK(chunk(Collective::Scatter, 256 << 10) == (64u << 10));
  CHECK(chunk(Collective::Gather, (1 << 20) - 4) == (256u << 10));
  CHECK(chunk(Collective::Gather, 1 << 20) == (4u << 20));
  CHECK(chunk(Collective::Reduce, (1 << 20) - 4) == (256u << 10));
  CHECK(chunk(Collective::Reduce, 1 << 20) == (4u << 20));
  CHECK(chunk(Collective::Reduce, 4 << 20) == (256u << 10));
  CHECK(chunk(Collective::Allgather, 1 << 20) == (1u << 20));
  CHECK(chunk(Collective::Allgather, 8 << 20) == (256u << 10));
  // scatter from 1 MiB through the segment in one chunk either way.
  for (bool fast : {true, false}) {
    d.set_fast_reads(fast);
    CHECK(picks(Collective::Scatter, 1 << 20) == "shm");
    CHECK(chunk(Collective::Scatter, 1 << 20) == (4u << 20));
    CHECK(picks(Collective::Scatter, 64 << 20) == "shm");
  }
  // Without peer reads (cma refuses; nothing probed, so reads count as
  // fast) 512 KiB-1 MiB allreduces halve recursively, as before the probe;
  // 1-4 MiB take the segment as with reads.
  d.set_peer_reads(false);
  d.set_fast_reads(true);
  CHECK(picks(Collective::Allreduce, 512 << 10) == "recursive_halving");
  CHECK(picks(Collective::Allreduce, 1 << 20) == "hierarchical_shm");
}

TEST_CASE("on 3 ranks and more the cma rules hold only where every rank has its own core",
          "[tuning]") {
  for (bool shared : {false, true}) {
    Topology topo = Topology::single_node(4, 1 << 20);
    topo.shared_cores = shared;
    Dispatcher d(TuningTable(std::vector<TuningRule>{}), topo);
    d.set_peer_reads(true);
    auto picks = [&](Collective c, uint64_t bytes) {
      return std::string(d.select(call(c, bytes, 4), "", "").algorithm->name);
    };
    INFO((shared ? "shared cores" : "own cores"));
    const std::pair<Collective, uint64_t> cases[] = {
        {Collective::Allreduce, 1 << 20}, {Collective::Reduce, 512 << 10},
        {Collective::Allgather, 1 << 20}, {Collective::Alltoall, 128 << 10},
        {Collective::Gather, 1 << 20}, {Collective::Scatter, 128 << 10}};
    for (const auto& [c, bytes] : cases) {
      INFO(collective_name(c) << " " << bytes << " B");
      // Shared cores: the segment; the mid-size allreduce as a
      // reduce-scatter and an allgather through it.
      const char* segment = c == Collective::Allreduce ? "hierarchical_shm" : "shm";
      CHECK(picks(c, bytes) == (shared ? segment : "cma"));
    }
  }
}

TEST_CASE("4 ranks and more sharing cores: the mid-size allreduce reduces 1/P each through the segment",
          "[tuning]") {
  for (int ranks : {3, 4, 8}) {
    Topology topo = Topology::single_node(ranks, 1 << 20);
    topo.shared_cores = true;
    Dispatcher d(TuningTable(std::vector<TuningRule>{}), topo);
    auto picks = [&](uint64_t bytes) {
      return std::string(d.select(call(Collective::Allreduce, bytes, ranks), "", "").algorithm->name);
    };
    INFO(ranks << " ranks");
    const char* mid = ranks >= 4 ? "hierarchical_shm" : "shm";
    CHECK(picks(64 << 10) == "shm");
    CHECK(picks(128 << 10) == mid);
    CHECK(picks(1 << 20) == mid);
    CHECK(picks((4 << 20) - 4) == mid);
    CHECK(picks(4 << 20) == "shm");
  }
}

TEST_CASE("one-node jobs default to the shared-memory algorithms where they measured fastest", "[tuning]") {
  const Dispatcher one_node(TuningTable(std::vector<TuningRule>{}), Topology::single_node(4, 1 << 20));
  const Dispatcher two_ranks(TuningTable(std::vector<TuningRule>{}), Topology::single_node(2, 1 << 20));
  // The algorithm the built-in rules pick for a call of `bytes` on all of
  // the dispatcher's ranks.
  auto picks = [](const Dispatcher& d, Collective c, uint64_t bytes, int nranks) {
    return d.select(call(c, bytes, nranks), "", "").algorithm->name;
  };
  Decision dec = one_node.select(call(Collective::Allreduce, 4 << 20, 4), "", "");
  CHECK(dec.algorithm->name == "shm");
  CHECK(dec.params.chunk_bytes == 256 << 10);
  CHECK(picks(one_node, Collective::ReduceScatter, 1 << 20, 4) == "shm");
  CHECK(picks(one_node, Collective::ReduceScatter, 64, 4) == "shm");
  CHECK(picks(one_node, Collective::Alltoall, 256, 4) == "lines");
  CHECK(picks(two_ranks, Collective::Alltoall, 1023, 2) == "lines");
  CHECK(picks(one_node, Collective::Alltoall, 1 << 10, 4) == "shm");
  CHECK(picks(one_node, Collective::Alltoall, 16 << 10, 4) == "shm");
  CHECK(picks(two_ranks, Collective::Alltoall, 16 << 10, 2) == "shm");
  CHECK(picks(two_ranks, Collective::Alltoall, 256 << 10, 2) == "shm");
  CHECK(picks(one_node, Collective::Reduce, 8, 4) == "shm");
  // 2 ranks' mid-size reduce in two chunks (the root reduces one while the
  // other rank copies the next in); elsewhere one chunk of up to 256 KiB.
  for (const auto& [bytes, chunk] : {std::pair<uint64_t, size_t>{32 << 10, 256 << 10},
                                     {64 << 10, 32 << 10}, {(128 << 10) - 4, 32 << 10},
                                     {128 << 10, 64 << 10}, {256 << 10, 128 << 10},
                                     {512 << 10, 256 << 10}}) {
    INFO("reduce " << bytes << " B on 2 ranks");
    dec = two_ranks.select(call(Collective::Reduce, bytes, 2), "", "");
    CHECK(dec.algorithm->name == "shm");
    CHECK(dec.params.chunk_bytes == chunk);
  }
  dec = one_node.select(call(Collective::Reduce, 128 << 10, 4), "", "");
  CHECK(dec.params.chunk_bytes == 256 << 10);
  CHECK(picks(one_node, Collective::Bcast, 4 << 10, 4) == "shm");
  CHECK(picks(one_node, Collective::Barrier, 0, 4) == "shm");
  // Where ranks share cores, the barrier goes through one leader.
  Topology shared_cores = Topology::single_node(4, 1 << 20);
  shared_cores.shared_cores = true;
  const Dispatcher oversubscribed(TuningTable(std::vector<TuningRule>{}), shared_cores);
  CHECK(picks(oversubscribed, Collective::Barrier, 0, 4) == "leader_shm");
  CHECK(picks(oversubscribed, Collective::Bcast, 8, 4) == "shm");
  // Since blocking calls run their schedule directly, the smallest bcast is
  // faster through the segment too.
  CHECK(picks(one_node, Collective::Bcast, 8, 4) == "shm");
  // Allreduce of 512 KiB-1 MiB on 2 ranks goes point to point where
  // nothing can read a peer (a little faster when the cores are close, 2x
  // when they are far apart), 1-8 MiB through the segment as a
  // reduce-scatter and an allgather; on 4 ranks, and below 512 KiB, the
  // segment keeps it.
  CHECK(picks(one_node, Collective::Allreduce, 32 << 10, 4) == "shm");
  CHECK(picks(two_ranks, Collective::Allreduce, 512 << 10, 2) == "recursive_halving");
  for (const uint64_t bytes : {uint64_t{1} << 20, uint64_t{4} << 20, (uint64_t{8} << 20) - 4})
    CHECK(picks(two_ranks, Collective::Allreduce, bytes, 2) == "hierarchical_shm");
  CHECK(picks(two_ranks, Collective::Allreduce, (512 << 10) - 4, 2) == "shm");
  CHECK(picks(two_ranks, Collective::Allreduce, 16 << 10, 2) == "shm");
  CHECK(picks(two_ranks, Collective::Allreduce, 8 << 20, 2) == "shm");
  // Without a shared segment the shm rule refuses and the general default runs.
  const Dispatcher no_segment(TuningTable(std::vector<TuningRule>{}), Topology::single_node(4));
  dec = no_segment.select(call(Collective::Allreduce, 4 << 20, 4), "", "");
  CHECK(dec.algorithm->name == "ring");
  CHECK(dec.fell_back());
  // Across nodes the one-node rules do not apply at all: allreduce is
  // node-aware, through each node's segment: one leader per node below 64
  // KiB, all local ranks carrying slices between nodes from there.
  const Dispatcher two_nodes_shared(TuningTable(std::vector<TuningRule>{}),
                                    Topology{4, 2, 2, {0, 0, 1, 1}, 1 << 20});
  const Dispatcher four_nodes_shared(TuningTable(std::vector<TuningRule>{}),
                                     Topology{8, 4, 2, {0, 0, 1, 1, 2, 2, 3, 3}, 1 << 20});
  // On two nodes in chunks of 128 KiB, and from 256 KiB with the phases
  // overlapped chunk by chunk.
  dec = two_nodes_shared.select(call(Collective::Allreduce, 128 << 10, 4), "", "");
  CHECK(dec.algorithm->name == "hierarchical_shm");
  CHECK(dec.params.chunk_bytes == 128 << 10);
  CHECK_FALSE(dec.fell_back());
  dec = two_nodes_shared.select(call(Collective::Allreduce, 4 << 20, 4), "", "");
  CHECK(dec.algorithm->name == "hierarchical_shm_overlap");
  CHECK_FALSE(dec.fell_back());
  CHECK(picks(two_nodes_shared, Collective::Allreduce, (64 << 10) - 4, 4) == "leader_shm");
  CHECK(picks(four_nodes_shared, Collective::Allreduce, 8, 8) == "leader_shm");
  CHECK(picks(four_nodes_shared, Collective::Allreduce, 64 << 10, 8) == "hierarchical_shm");
  // ... in chunks of the default 256 KiB on more than two nodes.
  dec = four_nodes_shared.select(call(Collective::Allreduce, 4 << 20, 8), "", "");
  CHECK(dec.algorithm->name == "hierarchical_shm");
  CHECK(dec.params.chunk_bytes == 0);
  CHECK(picks(four_nodes_shared, Collective::Bcast, 8, 8) == "leader_shm");
  CHECK(picks(two_nodes_shared, Collective::Reduce, 16 << 20, 4) == "leader_shm");
  CHECK(picks(two_nodes_shared, Collective::Reduce, 16 << 10, 4) == "leader_shm");
  CHECK(picks(two_nodes_shared, Collective::Reduce, (16 << 10) - 4, 4) == "leader");
  CHECK(picks(four_nodes_shared, Collective::Reduce, 8, 8) == "leader");
  CHECK(picks(four_nodes_shared, Collective::Reduce, 16 << 10, 8) == "leader_shm");
  CHECK(picks(two_nodes_shared, Collective::Barrier, 0, 4) == "leader_shm");
  CHECK(picks(four_nodes_shared, Collective::ReduceScatter, 8 << 10, 8) == "leader_shm");
  CHECK(picks(two_nodes_shared, Collective::Scatter, 64 << 10, 4) == "leader_shm");
  CHECK(picks(two_nodes_shared, Collective::Scatter, 4 << 20, 4) == "linear");
  CHECK(picks(four_nodes_shared, Collective::Scatter, 64, 8) == "tree");
  CHECK(picks(four_nodes_shared, Collective::Gather, 64, 8) == "linear");
  CHECK(picks(four_nodes_shared, Collective::Alltoall, 1 << 10, 8) == "hierarchical_shm");
  // Large alltoall across nodes: the MPI library's own (host buffers).
  CHECK(picks(two_nodes_shared, Collective::Alltoall, 1 << 20, 4) == "mpi");
  CHECK(picks(four_nodes_shared, Collective::Alltoall, 1 << 20, 8) == "mpi");
  // 512 KiB, and 128 KiB on 4 nodes, through the segments (256 KiB on 4
  // nodes: flat, below).
  CHECK(picks(two_nodes_shared, Collective::Alltoall, 512 << 10, 4) == "hierarchical_shm");
  CHECK(picks(four_nodes_shared, Collective::Alltoall, 512 << 10, 8) == "hierarchical_shm");
  CHECK(picks(four_nodes_shared, Collective::Alltoall, 128 << 10, 8) == "hierarchical_shm");
  // Up to 512 KiB on two nodes through the segments ("linear" stalled at
  // 128 KiB in many jobs).
  CHECK(picks(two_nodes_shared, Collective::Alltoall, 128 << 10, 4) == "hierarchical_shm");
  CHECK(picks(two_nodes_shared, Collective::Alltoall, (512 << 10) - 4 * 4, 4) == "hierarchical_shm");
  CHECK(picks(four_nodes_shared, Collective::Alltoall, 256 << 10, 8) == "pairwise");
  CollArgs on_device = call(Collective::Alltoall, 1 << 20, 4);
  on_device.memory = MemoryType::Cuda;
  CHECK(two_nodes_shared.select(on_device, "", "").algorithm->name == "pairwise");
  // Without segments the same designs with messages inside the nodes: one
  // leader per node on two nodes, and from 128 KiB on more nodes all local
  // ranks carrying slices between nodes.
  const Dispatcher two_nodes(TuningTable(std::vector<TuningRule>{}), Topology{4, 2, 2, {0, 0, 1, 1}, 0});
  dec = two_nodes.select(call(Collective::Allreduce, 4 << 20, 4), "", "");
  CHECK(dec.algorithm->name == "leader");
  CHECK(dec.fell_back());
  const Dispatcher four_nodes(TuningTable(std::vector<TuningRule>{}),
                              Topology{8, 4, 2, {0, 0, 1, 1, 2, 2, 3, 3}, 0});
  CHECK(picks(four_nodes, Collective::Allreduce, (128 << 10) - 4, 8) == "leader");
  CHECK(picks(four_nodes, Collective::Allreduce, 128 << 10, 8) == "hierarchical");
  // bcast and reduce through one leader per node, at every size.
  CHECK(picks(four_nodes, Collective::Bcast, 8, 8) == "leader");
  CHECK(picks(four_nodes, Collective::Bcast, 16 << 20, 8) == "leader");
  CHECK(picks(two_nodes, Collective::Reduce, 8, 4) == "leader");
  CHECK(picks(four_nodes, Collective::Reduce, 16 << 20, 8) == "leader");
  CHECK(picks(four_nodes, Collective::Allgather, 128 << 10, 8) == "ring");
  CHECK(picks(four_nodes_shared, Collective::Allgather, 128 << 10, 8) == "leader_shm");
  CHECK(picks(four_nodes_shared, Collective::Allgather, 256 << 10, 8) == "hierarchical_shm");
  CHECK(picks(four_nodes_shared, Collective::Allgather, 2 << 10, 8) == "leader_shm");
  CHECK(picks(four_nodes, Collective::Allgather, 2 << 10, 8) == "leader");
  CHECK(picks(two_nodes_shared, Collective::Allgather, 8, 4) == "leader_shm");
  CHECK(picks(two_nodes_shared, Collective::Allgather, 64 << 10, 4) == "hierarchical_shm");
}

TEST_CASE("algorithm parameters are found by building schedules", "[tuning]") {
  const auto* ring = algos::find_algorithm(Collective::Allreduce, "ring");
  const auto* linear = algos::find_algorithm(Collective::Gather, "linear");
  const auto* mpi = algos::find_algorithm(Collective::Allreduce, "mpi");
  const auto* dissemination = algos::find_algorithm(Collective::Barrier, "dissemination");
  REQUIRE(ring);
  REQUIRE(linear);
  REQUIRE(mpi);
  REQUIRE(dissemination);
  CHECK(algorithm_uses_param(*ring, "chunk_bytes"));
  CHECK_FALSE(algorithm_uses_param(*ring, "radix"));
  // The radix-k algorithms (reduce knomial refuses the 4 MiB probe).
  CHECK(algorithm_uses_param(*algos::find_algorithm(Collective::Allreduce, "recursive_multiplying"), "radix"));
  CHECK(algorithm_uses_param(*algos::find_algorithm(Collective::Bcast, "knomial"), "radix"));
  CHECK(algorithm_uses_param(*algos::find_algorithm(Collective::Reduce, "knomial"), "radix"));
  CHECK_FALSE(algorithm_uses_param(*linear, "chunk_bytes"));
  CHECK_FALSE(algorithm_uses_param(*mpi, "chunk_bytes"));
  CHECK_FALSE(algorithm_uses_param(*dissemination, "chunk_bytes"));
  CHECK_FALSE(algorithm_uses_param(*ring, "no_such_param"));
}

TEST_CASE("tutti-tune's merge: fastest per size, consecutive winners merged", "[tuning]") {
  auto size = [](uint64_t bytes, std::vector<TunedCandidate> ranked) {
    return TunedSize{bytes, std::move(ranked)};
  };
  AlgoParams chunk64;
  chunk64.chunk_bytes = 64 << 10;
  TunedCollective t{Collective::Allreduce,
                    {size(8, {{"recursive_doubling", {}, 2.0}, {"ring", {}, 3.0}}),
                     size(64, {{"recursive_doubling", {}, 2.5}, {"ring", {}, 3.5}}),
                     size(512, {}),  // nothing ran: absorbed by its neighbours
                     size(4096, {{"ring", {}, 5.0}, {"recursive_doubling", {}, 5.1}}),
                     size(32768, {{"recursive_doubling", {}, 9.0}, {"ring", {}, 9.3}}),
                     size(1 << 20, {{"ring", chunk64, 90.0}, {"ring", {}, 95.0}, {"mpi", {}, 99.0}})}};
  TuningRule base;
  base.memory = MemoryType::Host;
  std::vector<TuningRule> rules = merge_tuned(t, base);
  REQUIRE(rules.size() == 4);
  CHECK(rule_to_string(rules[0]) == "allreduce bytes=0-4K memory=host -> recursive_doubling");
  CHECK(rule_to_string(rules[1]) == "allreduce bytes=4K-32K memory=host -> ring");
  CHECK(rule_to_string(rules[2]) == "allreduce bytes=32K-1M memory=host -> recursive_doubling");
  CHECK(rule_to_string(rules[3]) == "allreduce bytes=1M- memory=host -> ring chunk_bytes=64K");
  for (const TunedSize& s : t.sizes) {
    if (s.ranked.empty()) continue;
    const TuningRule* r = tuned_rule_for(rules, Collective::Allreduce, s.bytes);
    REQUIRE(r);
    CHECK(r->algorithm == s.ranked[0].algorithm);  // tolerance 0: always the fastest
  }
  // With a 5% tolerance, 4K keeps recursive_doubling (2% slower there).
  rules = merge_tuned(t, base, 0.05);
  REQUIRE(rules.size() == 2);
  CHECK(rule_to_string(rules[0]) == "allreduce bytes=0-1M memory=host -> recursive_doubling");

  // The runner-up is the fastest other algorithm.
  REQUIRE(tuned_runner_up(t.sizes[5]));
  CHECK(tuned_runner_up(t.sizes[5])->algorithm == "mpi");
  CHECK_FALSE(tuned_runner_up(t.sizes[2]));

  // alltoallv: one rule, the best geometric mean over sizes.
  TunedCollective v{Collective::Alltoallv,
                    {size(64, {{"linear", {}, 1.0}, {"pairwise", {}, 1.5}}),
                     size(4096, {{"pairwise", {}, 4.0}, {"linear", {}, 4.2}}),
                     size(65536, {{"pairwise", {}, 40.0}, {"linear", {}, 44.0}})}};
  rules = merge_tuned(v, base);
  REQUIRE(rules.size() == 1);
  CHECK(rule_to_string(rules[0]) == "alltoallv bytes=0- memory=host -> linear");
}

TEST_CASE("a file tutti-tune writes loads back into the same rules", "[tuning]") {
  AlgoParams chunk;
  chunk.chunk_bytes = 256 << 10;
  const std::vector<TunedCollective> tuned = {
      {Collective::Allreduce,
       {{8, {{"recursive_doubling", {}, 2.0}, {"ring", {}, 3.0}}},
        {65536, {{"ring", chunk, 50.0}, {"ring", {}, 51.0}, {"tree", {}, 60.0}}}}},
      {Collective::Gather, {}},  // nothing measured: no rules, a comment
      {Collective::Barrier, {{0, {{"dissemination", {}, 3.0}, {"mpi", {}, 4.0}}}}},
  };
  TuningProvenance prov{"cluster \"q\"", "tutti-tune 0.1.0 (--max-bytes 1M, 4 ranks)",
                        "2025-01-01T00:00:00Z", "0.1.0"};
  TuningSection shape;
  shape.name = "4 ranks, 1 node, 4 per node";
  shape.ranks = parse_range("4");
  shape.nodes = parse_range("1");
  shape.ppn = parse_range("4");
  TuningRule base;
  base.memory = MemoryType::Host;
  const std::string text =
      write_tuning_toml("Line one.\n\nLine three.", prov, shape, tuned, base);
  check_golden(data_dir() / "written.toml", text);

  const TuningFile f = parse_tuning_toml(text, "written.toml", true);
  CHECK(f.provenance.cluster == "cluster \"q\"");
  CHECK(f.provenance.generated_by == prov.generated_by);
  REQUIRE(f.sections.size() == 1);
  CHECK(f.sections[0].name == shape.name);
  CHECK(f.sections[0].applies_to({4, 1, 4}));
  CHECK_FALSE(f.sections[0].applies_to({8, 2, 4}));
  std::vector<TuningRule> want;
  for (const TunedCollective& t : tuned)
    for (const TuningRule& r : merge_tuned(t, base)) want.push_back(r);
  REQUIRE(f.sections[0].rules.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i)
    CHECK(rule_to_string(f.sections[0].rules[i]) == rule_to_string(want[i]));
  CHECK(toml_quote("a\"b\\c\nd\x01") == "\"a\\\"b\\\\c\\nd\\u0001\"");
}

}  // namespace tutti
