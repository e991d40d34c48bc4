#include "sim_runner.hpp"

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include "engine.hpp"

namespace tutti::testing {

SimOutcome run_in_sim(const algos::Algorithm& algo, const std::vector<CollArgs>& args,
                      const std::vector<Bytes>& inputs, const SimOptions& options) {
  const int p = static_cast<int>(args.size());
  SimNetwork net(p, options.mode, options.threaded);
  SimOutcome outcome;
  struct Rank {
    std::unique_ptr<SimTransport> transport;
    std::shared_ptr<const Schedule> schedule;
    Bytes input, output, scratch;
    std::unique_ptr<ScheduleRun> run;
  };
  std::vector<Rank> ranks(static_cast<size_t>(p));
  const Topology topo = Topology::single_node(p, options.shared_bytes);
  // The node's shared segment, zeroed (flags start at 0), one port per rank.
  std::vector<char> segment_memory(SharedSegment::flag_bytes(p) + options.shared_bytes, 0);
  SharedSegment segment(segment_memory.data(), segment_memory.size(), p);
  std::vector<SharedPort> ports;
  for (int r = 0; r < p; ++r) ports.emplace_back(&segment, r);

  for (int r = 0; r < p; ++r) {
    Rank& rk = ranks[r];
    const CollArgs& a = args[r];
    if (auto why = algo.refuse(a, topo)) {
      outcome.error = str("rank ", r, ": refused: ", *why);
      return outcome;
    }
    ScheduleBuilder b(a, r, p, options.shared_bytes);
    try {
      algo.build(b);
      rk.schedule = std::make_shared<const Schedule>(b.finish());
    } catch (const Error& e) {
      outcome.error = str("rank ", r, ": build failed: ", e.what());
      return outcome;
    }
    const BufferShape shape = buffer_shape(a, r, p);
    if (options.check_hazards) {
      std::optional<InPlaceLayout> aliasing;
      if (a.in_place) aliasing = in_place_layout(a, r);
      if (auto hazard = find_round_hazards(*rk.schedule, shape.has_input ? shape.input_bytes : 0,
                                           shape.has_output ? shape.output_bytes : 0, aliasing)) {
        outcome.error = str("rank ", r, ": ", *hazard);
        return outcome;
      }
    }
    outcome.max_rounds = std::max(outcome.max_rounds, rk.schedule->rounds.size());
    outcome.messages += rk.schedule->message_count();

    // Output starts as garbage (alltoallv: zeros, its gaps are never written).
    const char fill = a.coll == Collective::Alltoallv ? 0 : static_cast<char>(0xcd);
    Buffers bufs;
    if (a.coll == Collective::Bcast) {
      rk.output = r == a.root ? inputs[r] : Bytes(shape.output_bytes, fill);
      bufs.output = rk.output.data();
    } else if (a.in_place && a.coll == Collective::Scatter) {
      if (r == a.root) {
        rk.input = inputs[r];
        bufs.input = rk.input.data();
        bufs.output = rk.input.data() + in_place_layout(a, r).offset;
      } else {
        rk.output = Bytes(shape.output_bytes, fill);
        bufs.output = rk.output.data();
      }
    } else if (a.in_place && ((a.coll != Collective::Reduce && a.coll != Collective::Gather) ||
                               r == a.root)) {
      // Input lives inside the output; the output is larger or equal.
      const InPlaceLayout where = in_place_layout(a, r);
      rk.output = Bytes(std::max(shape.output_bytes, shape.input_bytes), fill);
      if (!inputs[r].empty())  // an empty vector's data() may be null
        std::memcpy(rk.output.data() + where.offset, inputs[r].data(), inputs[r].size());
      bufs.output = rk.output.data();
      bufs.input = rk.output.data() + where.offset;
    } else {
      if (shape.has_input) {
        rk.input = inputs[r];
        bufs.input = rk.input.data();
      }
      if (shape.has_output) {
        rk.output = Bytes(shape.output_bytes, fill);
        bufs.output = rk.output.data();
      }
    }
    rk.scratch = Bytes(rk.schedule->scratch_bytes, static_cast<char>(0xab));
    bufs.scratch = rk.scratch.data();
    bufs.shared = &ports[r];
    rk.transport = std::make_unique<SimTransport>(net, r);
    rk.run = std::make_unique<ScheduleRun>(*rk.transport, rk.schedule, bufs, 7);
  }

  auto describe_waiting = [&] {
    std::string who;
    for (int r = 0; r < p; ++r)
      if (!ranks[r].run->finished()) {
        who += str(" rank ", r, " (round ", ranks[r].run->round(), ", waiting for");
        for (int peer : ranks[r].run->waiting_for()) who += str(" ", peer);
        who += ")";
      }
    return who;
  };

  if (options.threaded) {
    // Each rank progresses its own transport and schedule, like a process.
    std::atomic<bool> stop{false};
    std::atomic<int> done{0};
    std::vector<std::thread> threads;
    for (Rank& rk : ranks)
      threads.emplace_back([&rk, &stop, &done] {
        while (!rk.run->finished() && !stop.load(std::memory_order_relaxed)) {
          rk.transport->progress();
          if (!rk.run->advance()) std::this_thread::yield();
        }
        done.fetch_add(1);
      });
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration<double>(options.threaded_deadline_s);
    while (done.load() < p && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    stop.store(true);
    for (std::thread& t : threads) t.join();
  }

  // Drive all ranks until they finish; a sweep in which no message moves and
  // nobody finishes a round means the schedules wait on each other forever.
  while (!options.threaded) {
    const uint64_t delivered_before = net.messages_delivered();
    bool all_done = true, moved = false;
    for (Rank& rk : ranks) {
      if (rk.run->finished()) continue;
      const size_t before = rk.run->round();
      if (rk.run->advance() || rk.run->round() != before) moved = true;
      all_done = all_done && rk.run->finished();
    }
    if (all_done) break;
    if (!moved && net.messages_delivered() == delivered_before) {
      outcome.error = str("deadlock:", describe_waiting());
      return outcome;
    }
  }
  if (options.threaded) {
    bool all_done = true;
    for (Rank& rk : ranks) all_done = all_done && rk.run->finished();
    if (!all_done) {
      outcome.error = str("no progress in ", options.threaded_deadline_s, " s:", describe_waiting());
      return outcome;
    }
  }
  for (int r = 0; r < p; ++r) {
    if (ranks[r].run->status() != TUTTI_SUCCESS) {
      outcome.error = str("rank ", r, ": ", ranks[r].run->error());
      return outcome;
    }
  }
  if (net.in_flight() != 0) {
    outcome.error = str(net.in_flight(), " messages were sent and never received");
    return outcome;
  }
  for (int r = 0; r < p; ++r) {
    const CollArgs& a = args[r];
    const BufferShape shape = buffer_shape(a, r, p);
    if (!shape.has_output) continue;
    if (a.in_place && a.coll == Collective::Scatter && r == a.root) {
      const size_t off = in_place_layout(a, r).offset;
      outcome.outputs.push_back(Bytes(ranks[r].input.begin() + static_cast<long>(off),
                                      ranks[r].input.begin() +
                                          static_cast<long>(off + shape.output_bytes)));
      continue;
    }
    Bytes& out = ranks[r].output;
    out.resize(shape.output_bytes);
    outcome.outputs.push_back(out);
  }
  // Fill the non-significant slots so outputs[r] is rank r's.
  std::vector<Bytes> by_rank(static_cast<size_t>(p));
  size_t next = 0;
  for (int r = 0; r < p; ++r)
    if (buffer_shape(args[r], r, p).has_output) by_rank[r] = std::move(outcome.outputs[next++]);
  outcome.outputs = std::move(by_rank);
  return outcome;
}

}  // namespace tutti::testing
