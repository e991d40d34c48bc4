// The shared segment's flag protocol (node/shared_segment.hpp) on one thread:
// which signal may go when, and what it carries.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "algos/registry.hpp"
#include "base/status.hpp"
#include "engine/schedule.hpp"
#include "node/shared_segment.hpp"
#include "node/slot_writes.hpp"

namespace tutti::testing {
namespace {

struct TwoRanks {
  explicit TwoRanks(bool shared_cores = false)
      : groups(SharedSegment::signal_groups(2, shared_cores)),
        memory(SharedSegment::flag_bytes(2, groups), 0),
        segment(memory.data(), memory.size(), 2, groups) {}
  int groups;
  std::vector<char> memory;
  SharedSegment segment;
  SharedPort a{&segment, 0}, b{&segment, 1};
};

uint64_t take_value(SharedPort& port, int peer) {
  uint64_t v = 0;
  REQUIRE(port.arrived(peer));
  port.take(peer, &v, sizeof v);
  return v;
}

}  // namespace

TEST_CASE("a sender runs at most signal_groups signals ahead of its receiver", "[schedule]") {
  // 4 groups; 16 where ranks share cores; 2 on many ranks either way.
  const bool shared_cores = GENERATE(false, true);
  TwoRanks job(shared_cores);
  const uint64_t groups = static_cast<uint64_t>(job.groups);
  REQUIRE(groups == (shared_cores ? 16u : 4u));
  REQUIRE(job.segment.groups() == groups);
  CHECK(SharedSegment::signal_groups(SharedSegment::kWideCarryMaxRanks + 1, shared_cores) == 2);
  CHECK(SharedSegment::flag_bytes(2, 16) > SharedSegment::flag_bytes(2, 4));
  for (uint64_t v = 1; v <= groups; ++v) {
    REQUIRE(job.a.can_signal(1));
    job.a.signal(1, &v, sizeof v);
  }
  // Signal groups + 1 would overwrite signal 1's lines, which rank 1 has
  // not read.
  CHECK_FALSE(job.a.can_signal(1));
  CHECK(take_value(job.b, 0) == 1);
  REQUIRE(job.a.can_signal(1));
  const uint64_t v = groups + 1;
  job.a.signal(1, &v, sizeof v);
  CHECK_FALSE(job.a.can_signal(1));
  for (uint64_t want = 2; want <= groups + 1; ++want) CHECK(take_value(job.b, 0) == want);
  CHECK_FALSE(job.b.arrived(0));
  // Every group has its own lines.
  for (uint64_t n = 1; n <= groups; ++n)
    for (uint64_t m = n + 1; m <= groups; ++m) CHECK(job.segment.line(1, 0, n) != job.segment.line(1, 0, m));
  CHECK(job.segment.line(1, 0, 1) == job.segment.line(1, 0, 1 + groups));
}

TEST_CASE("a signal carries up to carry_bytes over several lines, each with its counter", "[schedule]") {
  TwoRanks job;
  const size_t most = SharedSegment::carry_bytes(2);
  REQUIRE(most == SharedSegment::kWideCarryLines * SharedSegment::kLinePayload);
  CHECK(SharedSegment::carry_bytes(SharedSegment::kWideCarryMaxRanks + 1) == SharedSegment::kLinePayload);
  uint64_t number = 0;  // of the signal
  for (size_t bytes : {size_t{1}, SharedSegment::kLinePayload, SharedSegment::kLinePayload + 1,
                       size_t{200}, most}) {
    INFO(bytes << " bytes");
    std::vector<unsigned char> sent(bytes), got(bytes + 8, 0xee);
    for (size_t i = 0; i < bytes; ++i) sent[i] = static_cast<unsigned char>(i * 7 + bytes);
    CHECK_FALSE(job.b.arrived(0, bytes));
    REQUIRE(job.a.can_signal(1));
    job.a.signal(1, sent.data(), bytes);
    ++number;
    // A line whose counter is not there yet holds the wait back.
    const size_t lines = SharedSegment::lines_for(bytes);
    char* last = job.segment.line(1, 0, number, lines - 1);
    REQUIRE(SharedSegment::counter(last).load() == number);
    SharedSegment::counter(last).store(number - 1);
    CHECK_FALSE(job.b.arrived(0, bytes));
    SharedSegment::counter(last).store(number);
    REQUIRE(job.b.arrived(0, bytes));
    job.b.take(0, got.data(), bytes);
    CHECK(std::equal(sent.begin(), sent.end(), got.begin()));
    CHECK(got[bytes] == 0xee);  // nothing past the data
  }
}

TEST_CASE("a signal tells its receiver how many of its signals were taken", "[schedule]") {
  TwoRanks job;
  // Rank 1 signals rank 0 until it is blocked; rank 0 takes them all and
  // answers once. The answer carries the news: rank 1 may signal again
  // (its acknowledgement row says so too, but the flag line is enough).
  const int groups = SharedSegment::signal_groups(2);
  for (int i = 0; i < groups; ++i) job.b.signal(0);
  CHECK_FALSE(job.b.can_signal(0));
  for (int i = 0; i < groups; ++i) take_value(job.a, 1);
  job.segment.ack(0, 1).store(0);  // hide the acknowledgement row
  job.a.signal(1);
  CHECK_FALSE(job.b.can_signal(0));  // not taken yet: no news
  take_value(job.b, 0);
  CHECK(job.b.can_signal(0));
}

}  // namespace tutti::testing

namespace tutti::testing {

TEST_CASE("slot writes take the way whose best call of the last two probe pairs was faster",
          "[schedule]") {
  SlotWrites writes;
  // Calls of one chunk of 64 KiB: they alternate between the halves.
  int half = 0;
  uint32_t index = 0;
  size_t area = 64 * 1024;
  auto call = [&] {
    const SlotWrites::CallMode mode = writes.begin_call(area, 1, half, true);
    half ^= 1;
    ++index;
    return mode;
  };
  // Calls 0 and 1 find each half with another layout; calls 2 to 5 probe,
  // then pairs of calls with growing gaps between them (ordinary_calls).
  CHECK_FALSE(call().timed);
  CHECK_FALSE(call().timed);
  // A probe call that ordinary_calls met: the first of the next pair.
  std::optional<SlotWrites::CallMode> met_probe;
  // One pair of probe calls: one writes its slots with normal stores and
  // took `normal` seconds, the other streams and took `streaming` (the
  // pairs take turns at which comes first); `written` bytes of slot
  // writes each.
  int pairs = 0;
  auto probe_pair = [&](double normal, double streaming, size_t written = 64 * 1024) {
    const SlotWrites::CallMode first = met_probe ? *met_probe : call();
    met_probe.reset();
    const SlotWrites::CallMode second = call();
    REQUIRE(first.timed);
    REQUIRE(second.timed);
    CHECK(first.streaming != second.streaming);
    CHECK(first.streaming == (pairs++ % 2 == 1));
    const bool streams_before = writes.streams(true);
    writes.note_probe_call(first, first.streaming ? streaming : normal, written);
    CHECK(writes.streams(true) == streams_before);  // half a pair decides nothing
    writes.note_probe_call(second, second.streaming ? streaming : normal, written);
  };
  // The ordinary calls up to the next pair of probes follow the verdict;
  // there are kProbeEvery - 2 of them after the early probes, and after
  // each pair the gap doubles, up to kMaxProbeGap.
  uint64_t gap = SlotWrites::kProbeEvery;
  auto ordinary_calls = [&] {
    uint64_t ordinary = 0;
    SlotWrites::CallMode m = call();
    for (; !m.timed; m = call()) {
      if (m.streaming != writes.streams(true)) FAIL("ordinary call " << index - 1);
      ++ordinary;
    }
    met_probe = m;
    CHECK(ordinary == gap - 2);
    gap = std::min(2 * gap, SlotWrites::kMaxProbeGap);
  };
  probe_pair(3e-4, 1e-4);  // streaming 3x faster (far-apart cores): the first pair decides
  CHECK(writes.streams(true));
  probe_pair(3e-4, 1e-4);
  CHECK(writes.streams(true));
  ordinary_calls();
  probe_pair(3e-4, 5e-3);  // a streamed call slowed by a fluke: the pair before still counts
  CHECK(writes.streams(true));
  ordinary_calls();
  probe_pair(1e-4, 2e-4);  // the cores close: normal stores at once (both pairs say so)
  CHECK_FALSE(writes.streams(true));
  ordinary_calls();
  probe_pair(5e-3, 2e-4);  // a fluke the other way
  CHECK_FALSE(writes.streams(true));
  ordinary_calls();
  probe_pair(1e-4, 2e-4);
  CHECK_FALSE(writes.streams(true));
  ordinary_calls();
  probe_pair(3e-4, 1e-4);  // far apart again: one pair is not enough...
  CHECK_FALSE(writes.streams(true));
  ordinary_calls();
  probe_pair(3e-4, 1e-4, 4096);  // (too few bytes written: decides nothing)
  CHECK_FALSE(writes.streams(true));
  ordinary_calls();
  probe_pair(3e-4, 1e-4);  // ... two are
  CHECK(writes.streams(true));
  ordinary_calls();
  probe_pair(1e-4, 1e-4);  // a tie: normal stores
  CHECK_FALSE(writes.streams(true));
  ordinary_calls();

  CHECK(gap == SlotWrites::kMaxProbeGap);

  // Times of another size do not count against a new size's: its first
  // pair decides. (The old size's probe that ordinary_calls met stays
  // unfinished.) A new size starts the gaps afresh.
  met_probe.reset();
  gap = SlotWrites::kProbeEvery;
  area = 128 * 1024;
  CHECK_FALSE(call().timed);
  CHECK_FALSE(call().timed);
  probe_pair(9e-4, 2e-4);
  CHECK(writes.streams(true));
  probe_pair(9e-4, 2e-4);

  // Non-blocking calls may end out of order, and a pair may lose a call
  // (a direct run reports nothing): the next pair starts afresh.
  // A stray end, which must not pair with the next pair's streamed call.
  writes.note_probe_call({true, false, true, area, 1}, 1e-6, 1 << 20);
  ordinary_calls();
  for (int pair = 0; pair < 2; ++pair) {
    const SlotWrites::CallMode x = met_probe ? *met_probe : call();
    met_probe.reset();
    const SlotWrites::CallMode y = call();
    REQUIRE((x.timed && y.timed && x.streaming != y.streaming));
    // The streamed call ends first, whichever began first.
    writes.note_probe_call(x.streaming ? x : y, 1e-4, 1 << 20);
    writes.note_probe_call(x.streaming ? y : x, 3e-4, 1 << 20);
    CHECK(writes.streams(true));
    ordinary_calls();
  }
}

TEST_CASE("calls whose slots move and calls whose slots stay decide apart", "[schedule]") {
  SlotWrites writes;
  // Calls of 4 chunks over 1 MiB stay in one half; their first call has a
  // new layout, the next four probe.
  REQUIRE_FALSE(writes.begin_call(1 << 20, 4, 0, false).timed);
  for (int pair = 0; pair < 2; ++pair) {
    const SlotWrites::CallMode a = writes.begin_call(1 << 20, 4, 0, false);
    const SlotWrites::CallMode b = writes.begin_call(1 << 20, 4, 0, false);
    REQUIRE((a.timed && b.timed && !a.moves && !b.moves));
    writes.note_probe_call(a, a.streaming ? 1e-4 : 3e-4, 1 << 20);
    writes.note_probe_call(b, b.streaming ? 1e-4 : 3e-4, 1 << 20);
  }
  CHECK(writes.streams(false));
  CHECK_FALSE(writes.streams(true));
  // The fixed calls' verdict does not reach one-chunk calls that move.
  const SlotWrites::CallMode moving = writes.begin_call(65536, 1, 1, true);
  CHECK(moving.moves);
  CHECK_FALSE(moving.streaming);
  SlotWrites::CallMode fixed;
  do fixed = writes.begin_call(1 << 20, 4, 0, false);
  while (fixed.timed);  // (back in its half, the next calls probe again)
  CHECK(fixed.streaming);
}

TEST_CASE("two sizes in turn, one in each half, each get their own verdict", "[schedule]") {
  SlotWrites writes;
  const size_t small = 64 * 1024, large = 1 << 20;
  auto area_of = [&](int i) { return i % 2 ? large : small; };
  // Calls 0 and 1 are each half's first; from call 2 on every call is valid
  // and calls 2-5 probe: two pairs, one of each size, interleaved.
  for (int i = 0; i < 2; ++i) REQUIRE_FALSE(writes.begin_call(area_of(i), 1, i % 2, true).timed);
  std::vector<SlotWrites::CallMode> probes;
  for (int i = 2; i < 6; ++i) probes.push_back(writes.begin_call(area_of(i), 1, i % 2, true));
  for (const SlotWrites::CallMode& m : probes) REQUIRE(m.timed);
  CHECK(probes[0].streaming != probes[2].streaming);  // the small size's pair
  CHECK(probes[1].streaming != probes[3].streaming);  // the large size's
  // The small calls are faster streamed, the large ones with normal stores.
  for (const SlotWrites::CallMode& m : probes) {
    const bool small_call = m.area == small;
    const double t = small_call ? (m.streaming ? 1e-5 : 3e-5) : (m.streaming ? 4e-4 : 2e-4);
    writes.note_probe_call(m, t, m.area);
  }
  for (int i = 6; i < 30; ++i) {
    const SlotWrites::CallMode m = writes.begin_call(area_of(i), 1, i % 2, true);
    REQUIRE_FALSE(m.timed);
    CHECK(m.streaming == (m.area == small));
  }
}

TEST_CASE("probes come early in each new slot layout, and only where the half kept its layout",
          "[schedule]") {
  SlotWrites writes;
  int half = 0;
  int index = 0;
  std::vector<int> probes;
  // `count` calls of `chunks` chunks over `area` bytes; an odd number of
  // chunks moves the next call to the other half, as take_parity does.
  auto calls = [&](int count, size_t area, uint32_t chunks) {
    for (int i = 0; i < count; ++i, ++index) {
      if (writes.begin_call(area, chunks, half, chunks == 1).timed) probes.push_back(index);
      if (chunks & 1) half ^= 1;
    }
  };
  calls(40, 4096, 1);       // 0-39: the first four valid calls, then two 31 calls later
  calls(10, 8192, 1);       // 40-49: a new size, valid from its third call
  calls(20, 1 << 20, 4);    // 50-69: one half, valid from its second call
  calls(10, 1 << 20, 16);   // 70-79: more chunks over the same area: new too
  CHECK(probes == std::vector<int>{2, 3, 4, 5, 36, 37, 42, 43, 44, 45, 51, 52, 53, 54, 71, 72, 73,
                                  74});
  // Two sizes in turn, each keeping to its half: every call after the
  // first two is valid, so the early probes come, then a pair 31 calls
  // later.
  probes.clear();
  for (int i = 0; i < 40; ++i, ++index) {
    const size_t area = i % 2 ? 4096 : 65536;
    if (writes.begin_call(area, 1, half, true).timed) probes.push_back(index);
    half ^= 1;
  }
  CHECK(probes == std::vector<int>{82, 83, 84, 85, 116, 117});
}

TEST_CASE("a forced slot write mode times nothing", "[schedule]") {
  SlotWrites automatic, forced;
  forced.force(true);
  int probes = 0;
  for (int i = 0; i < 100; ++i) {
    // (Ranks with different TUTTI_SHM_STREAM settings still put every
    // call's slots in the same place: no place depends on probing,
    // SharedPort::take_slide.)
    probes += automatic.begin_call(4096, 1, i % 2, true).timed;
    const SlotWrites::CallMode f = forced.begin_call(4096, 1, i % 2, true);
    CHECK_FALSE(f.timed);
    CHECK(f.streaming);
  }
  CHECK(probes == 6);  // calls 2-5, then 36 and 37 (the next pair would be 100 and 101)
  forced.force(false);
  CHECK_FALSE(forced.begin_call(4096, 1, 0, true).streaming);
}

}  // namespace tutti::testing

namespace tutti::testing {

TEST_CASE("one-chunk calls move their slots through the half, in turn", "[schedule]") {
  constexpr size_t kData = 64 * 1024;  // halves of 32 KiB
  std::vector<char> memory(SharedSegment::flag_bytes(2) + kData, 0);
  SharedSegment segment{memory.data(), memory.size(), 2};
  SharedPort port{&segment, 0};
  REQUIRE(port.half_bytes() == kData / 2);
  CHECK(port.take_slide(0, 1) == 0);     // no slots
  CHECK(port.take_slide(1000, 3) == 0);  // several chunks stay put
  CHECK(port.slide_places(1000, 3) == 1);
  // 1000 bytes take a 4 KiB step: 8 places in a 32 KiB half, then again.
  CHECK(port.slide_places(1000, 1) == 8);
  std::vector<size_t> got;
  for (int call = 0; call < 10; ++call) got.push_back(port.take_slide(1000, 1));
  CHECK(got == std::vector<size_t>{0, 4096, 8192, 12288, 16384, 20480, 24576, 28672, 0, 4096});
  for (size_t slide : got) CHECK(slide + 1000 <= port.half_bytes());
  // A call whose slots fill the half never moves; tiny ones stop at 32 places.
  SharedPort other{&segment, 1};
  CHECK(other.slide_places(kData / 2, 1) == 1);
  CHECK(other.take_slide(kData / 2, 1) == 0);
  CHECK(other.take_slide(kData / 2, 1) == 0);
  std::vector<char> big(SharedSegment::flag_bytes(2) + (8 << 20), 0);
  SharedSegment big_segment{big.data(), big.size(), 2};
  SharedPort third{&big_segment, 0};
  size_t largest = 0;
  for (int call = 0; call < 100; ++call)
    largest = std::max(largest, third.take_slide(64, 1));
  CHECK(largest == 31 * 4096);
}

}  // namespace tutti::testing

namespace tutti::testing {

// Two nodes of two ranks: {0, 1} and {2, 3}, each with a 64 KiB segment.
static Topology two_nodes_of_two() {
  Topology topo;
  topo.nranks = 4;
  topo.nnodes = 2;
  topo.max_ranks_per_node = 2;
  topo.node_of_rank = {0, 0, 1, 1};
  topo.shared_bytes = 1 << 16;
  topo.index_nodes();
  return topo;
}

TEST_CASE("a schedule may mix rounds of flags and of messages, each round of one kind", "[schedule]") {
  const Topology topo = two_nodes_of_two();
  CollArgs args;
  args.coll = Collective::Allreduce;
  args.count = 16;
  args.dtype = Datatype::Float32;
  ScheduleBuilder b(args, 0, topo);
  b.shm_signal(1);
  b.send(2, input(), 64);  // another kind: the flags' round closes first
  b.recv(2, output(), 64);
  b.shm_wait(1);
  const Schedule s = b.finish();
  REQUIRE(s.rounds.size() == 3);
  CHECK(s.rounds[0].flags);
  CHECK_FALSE(s.rounds[1].flags);
  CHECK(s.rounds[1].end - s.rounds[1].comm_begin == 2);
  CHECK(s.rounds[2].flags);
  CHECK(s.uses_shared);
  CHECK(s.uses_transport);

  // A flag to a rank of another node has no segment to go through.
  ScheduleBuilder wrong(args, 0, topo);
  CHECK_THROWS_AS(wrong.shm_signal(2), Error);
  // A node's segment carries data for the ranks of that node: 2 here.
  ScheduleBuilder carry(args, 0, topo);
  CHECK_NOTHROW(carry.shm_signal(1, input(), SharedSegment::carry_bytes(2)));
}

TEST_CASE("a mixed round holds messages and flags; leader_shm's bcast overlaps its phases",
          "[schedule]") {
  const Topology topo = two_nodes_of_two();
  CollArgs args;
  args.coll = Collective::Bcast;
  args.count = 1024;
  args.dtype = Datatype::Float32;
  ScheduleBuilder b(args, 0, topo);
  b.begin_mixed_round();
  b.send(2, output(), 64);
  b.shm_signal(1);
  b.recv(2, output(64), 64);
  b.shm_wait(1);
  b.end_round();
  b.send(2, output(), 64);  // a round of one kind again
  b.shm_signal(1);
  const Schedule s = b.finish();
  REQUIRE(s.rounds.size() == 3);
  CHECK(s.rounds[0].flags);
  CHECK(s.rounds[0].messages);
  CHECK(s.rounds[0].end - s.rounds[0].comm_begin == 4);
  CHECK(s.steps[s.rounds[0].end - 1].kind == StepKind::ShmWait);  // waits last
  CHECK(s.rounds[1].messages);
  CHECK_FALSE(s.rounds[1].flags);
  CHECK(s.rounds[2].flags);
  CHECK_FALSE(s.rounds[2].messages);

  // 4 KiB in 1 KiB segments: every leader's round after the first
  // receive sends or receives a segment while its node takes the one before.
  args.params.chunk_bytes = 1024;
  for (int rank : {0, 2}) {
    ScheduleBuilder leader(args, rank, topo);
    algos::find_algorithm(Collective::Bcast, "leader_shm")->build(leader);
    const Schedule ls = leader.finish();
    const auto mixed = std::count_if(ls.rounds.begin(), ls.rounds.end(),
                                     [](const Round& r) { return r.flags && r.messages; });
    CHECK(mixed == (rank == 0 ? 4 : 3));  // the last segment has nothing to overlap on node 1
  }
}

TEST_CASE("a port maps communicator ranks to its node's segment", "[schedule]") {
  std::vector<char> memory(SharedSegment::flag_bytes(2), 0);
  SharedSegment segment{memory.data(), memory.size(), 2};
  SharedPort plain{&segment, 0};
  CHECK(plain.index_of(1) == 1);
  // Communicator ranks 1 and 3 share this node, as its ranks 0 and 1.
  SharedPort mapped{&segment, 1};
  mapped.use_rank_index({0, 0, 1, 1});
  CHECK(mapped.index_of(1) == 0);
  CHECK(mapped.index_of(3) == 1);
}

}  // namespace tutti::testing
