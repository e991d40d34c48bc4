// A machine description for the cost model (model/predict.hpp): what a
// message costs inside a node and between nodes, how many NICs a node has,
// and how fast a rank reduces and copies. Read from a small TOML file (the
// subset it needs: [sections] and numeric keys, so no TOML library is needed)
// (docs/SCALE.md documents it, with an InfiniBand HDR example); the defaults
// are this project's test machine and its emulated cluster.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>

namespace tutti::model {

struct LinkCost {
  double alpha_us = 0;        // latency of one message
  double bytes_per_us = 1e3;  // bandwidth (1e3 bytes/us = 1 GB/s)
  // Messages above the eager limit (rendezvous: a handshake, then the data,
  // often by another mechanism) may cost differently; negative: as the
  // small ones.
  double rndv_alpha_us = -1;
  double rndv_bytes_per_us = -1;
  // Per message: a port (a rank's, inside a node; a NIC, between nodes)
  // starts at most one message every inject_us, however small (its message
  // rate; LogGP's gap). A lone message still costs alpha + bytes/beta; a
  // burst of k small ones from one port takes (k-1) * inject_us longer.
  double inject_us = 0;
  // The first rendezvous sizes, up to kShortLineMaxBytes, may follow a line
  // of their own: one line through 256 KiB and 4 MiB put a handshake of
  // 25-28 us on a 16 KiB message that took 6-7 us in all (docs/SCALE.md,
  // "Rendezvous"). Each line is used where it was measured, not the lower
  // of the two: where large messages run slower per byte (4 MiB out of
  // the caches), the large line's handshake fits near 0 and its
  // extrapolation put a 16 KiB message at 1.7 us against the 4.2 measured
  // (2026-11-30). Negative: the one line.
  double rndv_short_alpha_us = -1;
  double rndv_short_bytes_per_us = -1;
  static constexpr double kShortLineMaxBytes = 256 << 10;  // tutti-tune's ladder knee
  // Rendezvous messages whose bytes, times the node's ranks, fit in
  // compute.cache_bytes (Machine::cached: a collective's buffers, used call
  // after call, still in the shared cache) follow this line instead of the
  // large one, which tutti-tune fits through 4 MiB, out of the caches. Here
  // a 1 MiB message took 106 us in a collective, 9.9 GB/s, while the line
  // through 256 KiB and 4 MiB (6-7 GB/s) put it at 165 (2026-11-30).
  // Inside a node only (the bytes of a message between nodes come from the
  // network). Negative: the large line.
  double rndv_cached_alpha_us = -1;
  double rndv_cached_bytes_per_us = -1;
  // The largest message this link sends eagerly; negative: the machine's
  // protocol.eager_bytes. Shared memory and TCP switch at different sizes.
  // It picks the cost line (where tutti-tune saw the time jump).
  double eager_bytes = -1;
  // The largest message whose send completes once injected, without
  // waiting for the receiver (the protocol, not the cost line); negative:
  // eager_bytes. Between machines tutti pins UCX's rendezvous threshold to
  // 1 MiB (transport/ucx.cpp), while the time a TCP message takes here jumps
  // at 16-32 KiB: with the jump taken for the protocol, a pipeline's root
  // waited for every 256 KiB chunk to arrive, and the 2-node bcast and
  // reduce trees at 2 MiB were predicted 2.6-3.1x too slow (2026-12-06).
  double send_eager_bytes = -1;
  // How much longer a rendezvous message's bytes take when the sender
  // wrote them earlier in the call (a pipeline forwarding what it just
  // received or reduced): the receiver's copy then pulls lines dirty in
  // the sender's cache instead of reading memory. The rendezvous lines
  // are for bytes the sender did not just write (a collective's input).
  double written_factor = 1;

  double alpha(bool eager) const { return eager || rndv_alpha_us < 0 ? alpha_us : rndv_alpha_us; }
  double rate(bool eager) const {
    return eager || rndv_bytes_per_us <= 0 ? bytes_per_us : rndv_bytes_per_us;
  }
  // What a message of `bytes` costs: it holds its ports for bytes /
  // bytes_per_us and arrives alpha_us after that.
  struct Line {
    double alpha_us;
    double bytes_per_us;
    double us(double bytes) const { return alpha_us + bytes / bytes_per_us; }
  };
  // `cached`: the message is one of the cached line's (Machine::cached).
  Line line(double bytes, bool eager, bool cached = false) const {
    const bool cached_line = !eager && cached && rndv_cached_alpha_us >= 0 &&
                             rndv_cached_bytes_per_us > 0;
    const Line one = cached_line ? Line{rndv_cached_alpha_us, rndv_cached_bytes_per_us}
                                 : Line{alpha(eager), rate(eager)};
    if (eager || rndv_short_alpha_us < 0 || rndv_short_bytes_per_us <= 0 ||
        bytes > kShortLineMaxBytes)
      return one;
    const double first = rndv_short_alpha_us + bytes / rndv_short_bytes_per_us;
    // The first line is a lone message's time (a ping-pong); a port still
    // streams at the link's rendezvous rate, so the rest is latency (the
    // handshake), which a pipeline's next message overlaps. (Streaming at
    // the first line's rate where that is faster put the emulated
    // cluster's TCP pipelines at 4.2 GB/s: they run at 1.5.)
    return {std::max(0.0, first - bytes / one.bytes_per_us), one.bytes_per_us};
  }
};

struct Machine {
  // Between ranks of one node (shared memory through UCX or the segment).
  LinkCost intra{0.5, 5e3, -1, -1};
  // Between nodes, per NIC (the emulated cluster: TCP over veth). Its
  // message gap is the median of three calibrations between emulated nodes
  // (11.0, 13.7 and 15.0 us: docs/perf/machine-2x1-2026-11-27*.toml): with
  // none, a schedule posting hundreds of messages at once looked as cheap
  // as one message (docs/SCALE.md, "The per-message gap").
  LinkCost inter = [] {
    LinkCost l{25.0, 1.2e3, -1, -1, 14.0};
    l.send_eager_bytes = kInterMachineEagerBytes;
    return l;
  }();
  // One byte below UcxTransport::kInterMachineRndvBytes: UCX sends a
  // message of its rendezvous threshold and more by rendezvous (length >=
  // threshold). Not included: the model does not depend on the transport;
  // tests/unit/test_ucx_settings.cpp checks they agree.
  static constexpr double kInterMachineEagerBytes = (1 << 20) - 1;
  int nics_per_node = 1;
  // Inside a node, what the shared segment costs beyond its copies: a flag,
  // from one rank's store to its waiter seeing it (half a cache line's
  // round trip between two cores; negative: as an intra-node message), and
  // the fixed cost of one cross-memory read of a peer's buffer (a system
  // call that pins the peer's pages).
  double flag_us = -1;
  double peer_read_us = 0;
  // The rate of a cross-memory read beyond its fixed cost; 0: a
  // rendezvous message's inside the node (UCX's own large messages here
  // are such reads, with the protocol's costs on top: 8-10 GB/s against
  // about 20 for a 1 MiB read, docs/SCALE.md).
  double peer_read_bytes_per_us = 0;
  // The rate of a copy out of shared memory that another rank of the node
  // has just written (each cache line comes from that rank's core, not
  // this core's cache): a rank reading a peer's slot. 0: as a local
  // copy. The extra time over a local copy is charged to every copy and
  // reduction that reads the shared segment (peer_copy_extra_us); a
  // signal's payload is in its flag's cost.
  double peer_copy_bytes_per_us = 0;
  // The rate of a copy into shared memory that other ranks of the node read
  // earlier (each cache line is first taken back from their cores): a rank
  // writing its slot of the segment. 64 KiB took 7.0-7.4 us here against
  // 1.4 for a copy within one core's cache (2026-11-30), which put every
  // segment algorithm at 32 KiB 2-3x below its measured time. 0: as a
  // local copy. Charged to every copy and reduction into the segment of at
  // most peer_write_max_bytes (peer_write_extra_us): a larger one writes
  // lines the readers' cores no longer hold. The limit is fitted, not
  // measured: on 2 ranks 64-128 KiB predicted best (259 of 260 rows within
  // 2x), 256 KiB and more put 2 MiB calls of one chunk at 2.7x their time
  // (docs/perf/model-peer-write-2026-11-30.txt).
  double peer_write_bytes_per_us = 0;
  double peer_write_max_bytes = 128 << 10;
  double reduce_bytes_per_us = 4e3;  // one rank's reduction of two operands
  double copy_bytes_per_us = 8e3;    // one rank's local copy
  // Copies and reductions run from the caches, at the *_cached rates, while
  // an operand times the ranks of the node (which share the last-level
  // cache, each working on its own operands) is at most cache_bytes: on a
  // node whose ranks exchange a few MiB through shared memory, the data is
  // still in the shared cache when the next rank reads it. cache_bytes 0
  // (or a rate of 0): every size at the rates above.
  double cache_bytes = 0;
  double reduce_cached_bytes_per_us = 0;
  double copy_cached_bytes_per_us = 0;
  // CPUs the ranks of one node may run on; 0: one per rank. Where a node's
  // ranks outnumber them, the CPU work on that node (copies, reductions,
  // and the bytes of messages inside the node, which a CPU copies too) runs
  // on a pool of that many cores (model/predict.cpp): four ranks copying at
  // once on 2 cores take twice as long, a root working alone does not wait.
  // Latencies are not scaled: how long a descheduled rank takes to run
  // again is the scheduler's, and calibrating with the job's own rank
  // count puts it into the measured alpha already.
  int cores_per_node = 0;
  // CPUs that all nodes of the job share; 0: each node has its own. Set
  // where the nodes are emulated on one machine (tests/cluster: network
  // namespaces on this 2-core VM; scripts/model-check.py --cluster writes
  // it). Where the job's ranks outnumber them, every rank gets its share
  // of the cores (waiting ranks yield, so they stay runnable): CPU work and
  // every message's bytes, inside a node and between nodes (TCP's copies
  // on both ends), take ranks / host_cores times as long. A calibration's
  // ping-pong has the other ranks idle, so without it 2 x 2 emulated nodes
  // (4 ranks on 2 cores) were predicted at half their time (docs/SCALE.md).
  int host_cores = 0;
  // Messages up to this size are eager: the send completes once injected,
  // without waiting for the receive to be posted (a link's own
  // LinkCost::eager_bytes overrides it).
  double eager_bytes = 8192;
  bool eager(const LinkCost& link, double bytes) const {
    return bytes <= (link.eager_bytes >= 0 ? link.eager_bytes : eager_bytes);
  }
  // Whether a send of `bytes` completes once injected (LinkCost::send_eager_bytes).
  bool sends_eagerly(const LinkCost& link, double bytes) const {
    return link.send_eager_bytes >= 0 ? bytes <= link.send_eager_bytes : eager(link, bytes);
  }
  // What a collective call costs beyond its messages and local work (the
  // software path: dispatch, schedule lookup, entering and leaving the
  // progress loop), charged once per call.
  double call_us = 0.5;
  // The same for a blocking call that runs directly on the caller's thread,
  // without the engine (the shared-memory algorithms' small calls,
  // engine/direct_call.hpp). Negative: call_us.
  double direct_call_us = -1;

  // Bytes per us of a copy (a reduction) of `bytes` by one of the
  // `node_ranks` ranks of a node.
  // What reading `bytes` of the shared segment costs beyond a local copy's
  // reading them.
  double peer_copy_extra_us(size_t bytes, int node_ranks) const {
    return beyond_local_copy_us(bytes, peer_copy_bytes_per_us, node_ranks);
  }
  // What writing `bytes` into the shared segment costs beyond a local
  // copy's writing them.
  double peer_write_extra_us(size_t bytes, int node_ranks) const {
    if (static_cast<double>(bytes) > peer_write_max_bytes) return 0;
    return beyond_local_copy_us(bytes, peer_write_bytes_per_us, node_ranks);
  }
  // `bytes` at `rate` less a local copy of them; 0 where `rate` is 0 (not
  // set) or faster than the local copy.
  double beyond_local_copy_us(size_t bytes, double rate, int node_ranks) const {
    if (rate <= 0) return 0;
    const double b = static_cast<double>(bytes);
    return std::max(0.0, b / rate - b / copy_rate(bytes, node_ranks));
  }
  double copy_rate(size_t bytes, int node_ranks) const {
    return cached(bytes, node_ranks) && copy_cached_bytes_per_us > 0 ? copy_cached_bytes_per_us
                                                                     : copy_bytes_per_us;
  }
  double reduce_rate(size_t bytes, int node_ranks) const {
    return cached(bytes, node_ranks) && reduce_cached_bytes_per_us > 0
               ? reduce_cached_bytes_per_us
               : reduce_bytes_per_us;
  }
  // Only on nodes of several ranks: a rank alone on its node reads what
  // came over the network (and the emulated nodes of tests/cluster, which
  // share one machine's cache and cores, ran 1.5-2x slower than the cached
  // rates say).
  bool cached(size_t bytes, int node_ranks) const {
    return node_ranks > 1 && static_cast<double>(bytes) * node_ranks <= cache_bytes;
  }
};

// Reads a machine description; keys missing from the file keep their
// defaults. Throws Error(TUTTI_ERR_INVALID_ARGUMENT) naming the file, line
// and key on anything it does not understand.
Machine load_machine(const std::string& path);
Machine parse_machine(const std::string& text, const std::string& origin);

}  // namespace tutti::model
