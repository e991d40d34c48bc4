#include "sim_runner.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>

#include "engine/engine.hpp"

namespace tutti::testing {
namespace {

// One rank's part of one call: its schedule, buffers and run.
struct RankCall {
  std::shared_ptr<const Schedule> schedule;
  Bytes input, output, scratch;
  std::unique_ptr<ScheduleRun> run;
};

// The nodes' shared segments, zeroed (flags start at 0), one port per rank,
// each segment over the ranks of its node (the whole communicator on one
// node); a node's is allocated when a schedule first needs it (its flags
// grow as P^2).
class SimSegments {
 public:
  SimSegments(const Topology& topo, size_t data_bytes, std::optional<bool> streaming)
      : nodes_(NodeIndex::of(topo.nranks, topo.node_of_rank)), several_(topo.nnodes > 1),
        data_bytes_(data_bytes), streaming_(streaming), per_node_(nodes_.ranks_of_node.size()) {}
  SharedPort& port(int rank) {
    const auto group = static_cast<size_t>(nodes_.group_of_rank[static_cast<size_t>(rank)]);
    Node& node = per_node_[group];
    if (!node.segment) {
      const int n = static_cast<int>(nodes_.ranks_of_node[group].size());
      node.memory.assign(SharedSegment::flag_bytes(n) + data_bytes_, 0);
      node.segment = std::make_unique<SharedSegment>(node.memory.data(), node.memory.size(), n);
      for (int r = 0; r < n; ++r) {
        node.ports.emplace_back(node.segment.get(), r);
        node.ports.back().slot_writes().force(streaming_);
        if (several_) node.ports.back().use_rank_index(nodes_.local_of_rank);
      }
    }
    return node.ports[static_cast<size_t>(nodes_.local_of_rank[static_cast<size_t>(rank)])];
  }

 private:
  struct Node {
    std::vector<char> memory;
    std::unique_ptr<SharedSegment> segment;
    std::vector<SharedPort> ports;
  };
  NodeIndex nodes_;
  bool several_;
  size_t data_bytes_;
  std::optional<bool> streaming_;
  std::vector<Node> per_node_;
};

// Builds and checks rank r's schedule for `call`; sets up its buffers and
// starts its run. Returns an error description or "".
std::string prepare(const SimCall& call, int r, const SimOptions& options, SimTransport& transport,
                    SimSegments& segments, RankCall& rc) {
  const int p = static_cast<int>(call.args.size());
  const CollArgs& a = call.args[r];
  const Topology topo = sim_topology(p, options);
  if (auto why = call.algo->refuse(a, topo)) return str("rank ", r, ": refused: ", *why);
  ScheduleBuilder b(a, r, topo);
  try {
    call.algo->build(b);
    rc.schedule = std::make_shared<const Schedule>(b.finish());
  } catch (const Error& e) {
    return str("rank ", r, ": build failed: ", e.what());
  }
  const BufferShape shape = buffer_shape(a, r, p);
  if (options.check_hazards) {
    std::optional<InPlaceLayout> aliasing;
    if (a.in_place) aliasing = in_place_layout(a, r);
    if (auto hazard = find_round_hazards(*rc.schedule, shape.has_input ? shape.input_bytes : 0,
                                         shape.has_output ? shape.output_bytes : 0, aliasing))
      return str("rank ", r, ": ", *hazard);
  }

  // Output starts as garbage (alltoallv: zeros, its gaps are never written).
  const char fill = a.coll == Collective::Alltoallv ? 0 : static_cast<char>(0xcd);
  const Bytes& in = call.inputs[r];
  Buffers bufs;
  if (a.coll == Collective::Bcast) {
    rc.output = r == a.root ? in : Bytes(shape.output_bytes, fill);
    bufs.output = rc.output.data();
  } else if (a.in_place && a.coll == Collective::Scatter) {
    if (r == a.root) {
      rc.input = in;
      bufs.input = rc.input.data();
      bufs.output = rc.input.data() + in_place_layout(a, r).offset;
    } else {
      rc.output = Bytes(shape.output_bytes, fill);
      bufs.output = rc.output.data();
    }
  } else if (a.in_place &&
             ((a.coll != Collective::Reduce && a.coll != Collective::Gather) || r == a.root)) {
    // Input lives inside the output; the output is larger or equal.
    const InPlaceLayout where = in_place_layout(a, r);
    rc.output = Bytes(std::max(shape.output_bytes, shape.input_bytes), fill);
    if (!in.empty())  // an empty vector's data() may be null
      std::memcpy(rc.output.data() + where.offset, in.data(), in.size());
    bufs.output = rc.output.data();
    bufs.input = rc.output.data() + where.offset;
  } else {
    if (shape.has_input) {
      rc.input = in;
      bufs.input = rc.input.data();
    }
    if (shape.has_output) {
      rc.output = Bytes(shape.output_bytes, fill);
      bufs.output = rc.output.data();
    }
  }
  rc.scratch = Bytes(rc.schedule->scratch_bytes, static_cast<char>(0xab));
  bufs.scratch = rc.scratch.data();
  if (rc.schedule->uses_shared) bufs.shared = &segments.port(r);
  rc.run = std::make_unique<ScheduleRun>(transport, rc.schedule, bufs, 7);
  return "";
}

// What rank r's buffers hold after `call`, where the output is significant.
std::vector<Bytes> outputs_of(const SimCall& call, std::vector<RankCall*> per_rank) {
  const int p = static_cast<int>(call.args.size());
  std::vector<Bytes> outputs(static_cast<size_t>(p));
  for (int r = 0; r < p; ++r) {
    const CollArgs& a = call.args[r];
    const BufferShape shape = buffer_shape(a, r, p);
    if (!shape.has_output) continue;
    RankCall& rc = *per_rank[r];
    if (a.in_place && a.coll == Collective::Scatter && r == a.root) {
      const auto begin = rc.input.begin() + static_cast<long>(in_place_layout(a, r).offset);
      outputs[r] = Bytes(begin, begin + static_cast<long>(shape.output_bytes));
      continue;
    }
    outputs[r] = std::move(rc.output);
    outputs[r].resize(shape.output_bytes);
  }
  return outputs;
}

}  // namespace

Topology sim_topology(int nranks, const SimOptions& options) {
  if (options.node_of_rank.empty()) {
    // The simulated ranks share one process: any of them can read another's
    // buffers (a peer read of this process's memory is a memcpy).
    Topology t = Topology::single_node(nranks, options.shared_bytes);
    t.peer_reads = options.peer_reads && options.shared_bytes > 0;
    return t;
  }
  Topology t;
  t.nranks = nranks;
  t.node_of_rank = options.node_of_rank;
  std::vector<int> per_node;
  for (int node : t.node_of_rank) {
    if (node >= static_cast<int>(per_node.size())) per_node.resize(static_cast<size_t>(node) + 1);
    ++per_node[static_cast<size_t>(node)];
  }
  t.nnodes = static_cast<int>(per_node.size());
  t.max_ranks_per_node = *std::max_element(per_node.begin(), per_node.end());
  t.shared_bytes = options.shared_bytes;  // each node's segment
  t.index_nodes();
  return t;
}

SimOutcome run_in_sim(const algos::Algorithm& algo, const std::vector<CollArgs>& args,
                      const std::vector<Bytes>& inputs, const SimOptions& options) {
  return run_sequence_in_sim({SimCall{&algo, args, inputs}}, options).front();
}

std::vector<SimOutcome> run_sequence_in_sim(const std::vector<SimCall>& calls,
                                            const SimOptions& options) {
  std::vector<SimOutcome> outcomes(calls.size());
  auto failed = [&outcomes](std::string error) {
    outcomes.front().error = std::move(error);
    return outcomes;
  };
  if (calls.empty()) return outcomes;
  const int p = static_cast<int>(calls.front().args.size());
  SimNetwork net(p, options.mode, options.threaded);
  SimSegments segments(sim_topology(p, options), options.shared_bytes, options.shm_streaming);
  std::vector<std::unique_ptr<SimTransport>> transports;
  for (int r = 0; r < p; ++r) transports.push_back(std::make_unique<SimTransport>(net, r));
  // calls x ranks, each rank's runs created in call order (as a program
  // starts them, which is what the shared segment's parity sequence needs).
  std::vector<std::vector<RankCall>> runs(calls.size());
  for (size_t c = 0; c < calls.size(); ++c) {
    runs[c].resize(static_cast<size_t>(p));
    for (int r = 0; r < p; ++r) {
      const std::string error = prepare(calls[c], r, options, *transports[r], segments, runs[c][r]);
      if (!error.empty()) return failed(calls.size() > 1 ? str("call ", c, ": ", error) : error);
      outcomes[c].max_rounds = std::max(outcomes[c].max_rounds, runs[c][r].schedule->rounds.size());
      outcomes[c].messages += runs[c][r].schedule->message_count();
    }
  }
  // The call each rank is in (calls.size() once it is done).
  std::vector<size_t> current(static_cast<size_t>(p), 0);
  auto skip_finished = [&](int r) {
    while (current[r] < calls.size() && runs[current[r]][r].run->finished() &&
           runs[current[r]][r].run->status() == TUTTI_SUCCESS)
      ++current[r];
  };
  auto done = [&](int r) {
    return current[r] == calls.size() ||
           (runs[current[r]][r].run->finished() && runs[current[r]][r].run->status() != TUTTI_SUCCESS);
  };
  auto describe_waiting = [&] {
    std::string who;
    for (int r = 0; r < p; ++r)
      if (!done(r)) {
        const ScheduleRun& run = *runs[current[r]][r].run;
        who += str(" rank ", r, " (", calls.size() > 1 ? str("call ", current[r], ", ") : "",
                   "round ", run.round(), ", waiting for");
        for (int peer : run.waiting_for()) who += str(" ", peer);
        who += ")";
      }
    return who;
  };

  if (options.threaded) {
    // Each rank progresses its own transport and schedules, like a process.
    std::atomic<bool> stop{false};
    std::atomic<int> finished{0};
    std::vector<std::thread> threads;
    for (int r = 0; r < p; ++r)
      threads.emplace_back([&, r] {
        while (!stop.load(std::memory_order_relaxed)) {
          skip_finished(r);
          if (done(r)) break;
          transports[r]->progress();
          if (!runs[current[r]][r].run->advance()) std::this_thread::yield();
        }
        finished.fetch_add(1);
      });
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration<double>(options.threaded_deadline_s);
    while (finished.load() < p && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    stop.store(true);
    for (std::thread& t : threads) t.join();
    for (int r = 0; r < p; ++r)
      if (!done(r)) return failed(str("no progress in ", options.threaded_deadline_s, " s:", describe_waiting()));
  } else {
    // Drive all ranks until they finish, each as far as it gets before the
    // next one moves (into its next calls too: that is how a rank gets
    // ahead of its peers, which the shared segment's reuse rules must
    // survive). A sweep in which no message moves and nobody finishes a
    // round means the schedules wait on each other forever.
    for (;;) {
      const uint64_t delivered_before = net.messages_delivered();
      bool all_done = true, moved = false;
      for (int r = 0; r < p; ++r) {
        for (;;) {
          skip_finished(r);
          if (done(r)) break;
          ScheduleRun& run = *runs[current[r]][r].run;
          const size_t before = run.round();
          const bool finished = run.advance();
          if (finished || run.round() != before) moved = true;
          if (!finished) break;
        }
        all_done = all_done && done(r);
      }
      if (all_done) break;
      if (!moved && net.messages_delivered() == delivered_before)
        return failed(str("deadlock:", describe_waiting()));
    }
  }
  for (size_t c = 0; c < calls.size(); ++c)
    for (int r = 0; r < p; ++r)
      if (runs[c][r].run->status() != TUTTI_SUCCESS)
        return failed(str(calls.size() > 1 ? str("call ", c, ": ") : "", "rank ", r, ": ",
                          runs[c][r].run->error()));
  if (net.in_flight() != 0) return failed(str(net.in_flight(), " messages were sent and never received"));
  for (size_t c = 0; c < calls.size(); ++c) {
    std::vector<RankCall*> per_rank;
    for (RankCall& rc : runs[c]) per_rank.push_back(&rc);
    outcomes[c].outputs = outputs_of(calls[c], per_rank);
  }
  return outcomes;
}

}  // namespace tutti::testing
