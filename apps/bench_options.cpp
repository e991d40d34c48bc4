#include "bench_options.hpp"

#include <cstdio>
#include <cstdlib>

#include "base/status.hpp"
#include "cli.hpp"

namespace tutti::apps {
namespace {

constexpr const char* kUsage = R"(usage: tutti-bench [options]   (run under mpirun or srun)

  --op NAME            collective: allreduce reduce bcast allgather reduce_scatter gather
                       scatter alltoall alltoallv barrier, or "all"        [allreduce]
                       reduce-kernel: tutti's CUDA reduction kernel alone (dtype,
                       redop, sizes as given; one buffer of SIZE per operand)
                       against a device-to-device copy, in GB/s (needs a GPU)
  --dtype NAME         int8 uint8 int32 uint32 int64 uint64 float16 bfloat16 float32
                       float64                                             [float32]
  --redop NAME         sum prod min max avg                                [sum]
  --min-bytes SIZE     smallest message (K/M/G suffixes)                   [8]
  --max-bytes SIZE     largest message                                     [64M]
  --step-factor F      size multiplier between rows                        [2]
  --iters N            timed iterations per size                           [20]
  --warmup N           untimed iterations per size                         [5]
  --batch K            back-to-back calls per timed iteration (time / K), as the
                       OSU benchmarks time; 1 times each call alone          [1]
  --back-to-back       time the --iters calls as one stream, each call started
                       as soon as the last returned (no barrier between calls;
                       all of tutti's calls, then all of MPI's): what a loop of
                       calls in an application sees. Time = the median over
                       10 segments of the stream of a segment's time per call.
                       Streams of quick calls are lengthened (by the warm-up's
                       pace, up to 131072 calls) so that a segment lasts about
                       20 us. Default: a barrier before each timed call
  --algorithm NAME     force this algorithm (else the dispatcher chooses)
  --root R             root of rooted collectives                          [0]
  --in-place           use TUTTI_IN_PLACE
  --nonblocking        call the tutti_i* variant followed by tutti_wait
  --check              verify every size on random data; count wrong elements:
                       every timed call (each on one of three inputs in turn;
                       with --back-to-back the stream's last call) and one
                       more call on fresh buffers
  --compare-mpi        also time the MPI library's own collective on the same
                       buffers, interleaved iteration by iteration
  --bounds             also measure, interleaved the same way, what the hardware
                       allows: every rank memcpy-ing the message size at once
                       (copy_us: the memory traffic of a one-node allreduce,
                       allgather or alltoall; of_bound = copy_us / time_us),
                       a cache-line round trip between ranks 0 and 1 (rtt_us),
                       and up to 4 KiB, a bare exchange between ranks 0 and 1
                       through shared memory of what each hands the other in
                       a 2-rank call (exchange_us: copy in, flag, wait, copy
                       out; 0 where not measured)
  --memory host|cuda   where the buffers live                              [host]
  --format table|csv|json                                                  [table]
  --soak N             instead of a sweep: N checked calls, each of a random
                       collective, size (0 to --max-bytes, default 1M here),
                       datatype, op, root, algorithm, in-place and blocking
                       mode; reports wrong results and resident memory
  --seed S             the soak's random sequence                          [1]
  --soak-window W      the soak starts W calls back to back (no sync between
                       them, the non-blocking ones in flight together, waited
                       in an order that differs between ranks), then checks
                       them                                                 [1]
  --soak-comms K       the soak's calls go to K communicators over the same
                       ranks (each call's drawn at random)                  [1]
  --soak-split         two more communicators over parts of the ranks: the
                       even and the odd ranks (a call drawn for it runs on
                       both halves), and every rank but the last
  --soak-churn         the extra communicators (--soak-comms, --soak-split)
                       are destroyed and made anew every 16 windows
  --soak-threads T     T soaks at once, each thread on communicators of its
                       own with its own random sequence (MPI is initialised
                       with MPI_THREAD_MULTIPLE); the memory is then not
                       judged                                               [1]
  --soak-groups        half the soak's windows, drawn at random, run as one
                       group each (tutti_group_start/end)
  --soak-p2p           one soak call in eight is a ring exchange: isend to the
                       next rank, irecv from the previous (or any source)
  --soak-max-growth KIB  the soak fails if the largest rank's resident memory
                       grows by more than this from its half-way call to
                       its end                                          [4096]
  --soak-leak KIB      leak KIB per call in the soak's second half (to test
                       the growth check)                                   [0]

Size = the largest buffer of one rank (nccl-tests convention): allreduce, reduce,
bcast: the vector; allgather, gather: the gathered result; reduce_scatter,
scatter, alltoall(v): the full input. Time = median over iterations of the
slowest rank. busbw uses nccl-tests' factors. Exit code 1 if any result is wrong.
)";

std::vector<Collective> parse_collectives(const std::string& v) {
  if (v == "all") return {std::begin(kAllCollectives), std::end(kAllCollectives)};
  const auto c = parse_collective(v);
  if (!c) fail(TUTTI_ERR_INVALID_ARGUMENT, "--op: unknown collective '", v, "'");
  return {*c};
}

}  // namespace

void print_bench_usage() { std::fputs(kUsage, stdout); }

BenchOptions parse_bench_options(int argc, char** argv) {
  BenchOptions o;
  bool max_bytes_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail(TUTTI_ERR_INVALID_ARGUMENT, arg, " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      o.help = true;
      return o;
    } else if (arg == "--op") {
      const std::string v = value();
      if (v == "reduce-kernel")
        o.reduce_kernel = true;
      else
        o.collectives = parse_collectives(v);
    } else if (arg == "--dtype") {
      const std::string v = value();
      const auto dt = parse_datatype(v);
      if (!dt) fail(TUTTI_ERR_INVALID_ARGUMENT, "--dtype: unknown datatype '", v, "'");
      o.dtype = *dt;
    } else if (arg == "--redop") {
      const std::string v = value();
      const auto op = parse_op(v);
      if (!op) fail(TUTTI_ERR_INVALID_ARGUMENT, "--redop: unknown op '", v, "'");
      o.redop = *op;
    } else if (arg == "--min-bytes") {
      o.min_bytes = parse_bytes(value(), arg);
    } else if (arg == "--max-bytes") {
      o.max_bytes = parse_bytes(value(), arg);
      max_bytes_given = true;
    } else if (arg == "--step-factor") {
      o.step_factor = parse_double(value(), arg, 1.01);
    } else if (arg == "--iters") {
      o.iters = static_cast<int>(parse_int(value(), arg, 1, 1000000));
    } else if (arg == "--warmup") {
      o.warmup = static_cast<int>(parse_int(value(), arg, 0, 1000000));
    } else if (arg == "--batch") {
      o.batch = static_cast<int>(parse_int(value(), arg, 1, 1000000));
    } else if (arg == "--algorithm") {
      o.algorithm = value();
    } else if (arg == "--root") {
      o.root = static_cast<int>(parse_int(value(), arg, 0, 1 << 30));
    } else if (arg == "--in-place") {
      o.in_place = true;
    } else if (arg == "--nonblocking") {
      o.nonblocking = true;
    } else if (arg == "--check") {
      o.check = true;
    } else if (arg == "--compare-mpi") {
      o.compare_mpi = true;
    } else if (arg == "--bounds") {
      o.bounds = true;
    } else if (arg == "--memory") {
      const std::string v = value();
      const auto m = parse_memory_type(v);
      if (!m) fail(TUTTI_ERR_INVALID_ARGUMENT, "--memory: expected host or cuda, got '", v, "'");
      o.memory = *m;
    } else if (arg == "--soak") {
      o.soak_calls = parse_int(value(), arg, 1, 1000000000);
    } else if (arg == "--soak-comms") {
      o.soak_comms = parse_int(value(), arg, 1, 8);
    } else if (arg == "--soak-churn") {
      o.soak_churn = true;
    } else if (arg == "--soak-split") {
      o.soak_split = true;
    } else if (arg == "--soak-p2p") {
      o.soak_p2p = true;
    } else if (arg == "--soak-threads") {
      o.soak_threads = parse_int(value(), arg, 1, 16);
    } else if (arg == "--soak-groups") {
      o.soak_groups = true;
    } else if (arg == "--soak-window") {
      o.soak_window = parse_int(value(), arg, 1, 64);
    } else if (arg == "--soak-max-growth") {
      o.soak_max_growth_kib = parse_int(value(), arg, 0, 1ll << 40);
    } else if (arg == "--soak-leak") {
      o.soak_leak_kib = parse_int(value(), arg, 0, 1 << 20);
    } else if (arg == "--back-to-back") {
      o.back_to_back = true;
    } else if (arg == "--seed") {
      o.soak_seed = static_cast<uint64_t>(parse_int(value(), arg, 0, 1ll << 62));
    } else if (arg == "--format") {
      const std::string v = value();
      if (v == "table")
        o.format = Format::Table;
      else if (v == "csv")
        o.format = Format::Csv;
      else if (v == "json")
        o.format = Format::Json;
      else
        fail(TUTTI_ERR_INVALID_ARGUMENT, "--format: expected table, csv or json, got '", v, "'");
    } else {
      fail(TUTTI_ERR_INVALID_ARGUMENT, "unknown option '", arg, "' (see --help)");
    }
  }
  if (o.soak_calls > 0 && !max_bytes_given) o.max_bytes = 1 << 20;
  if (o.back_to_back && o.batch != 1)
    fail(TUTTI_ERR_INVALID_ARGUMENT, "--back-to-back and --batch: choose one way of timing");
  if (o.back_to_back && o.bounds)
    fail(TUTTI_ERR_INVALID_ARGUMENT, "--bounds times with a barrier per call: drop --back-to-back");
  if (o.min_bytes > o.max_bytes)
    fail(TUTTI_ERR_INVALID_ARGUMENT, "--min-bytes exceeds --max-bytes");
  return o;
}

}  // namespace tutti::apps
