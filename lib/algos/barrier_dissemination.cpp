// barrier "dissemination" (Hensgen, Finkel & Manber): in round k every rank
// signals rank r + 2^k and waits for rank r - 2^k. After ceil(log2 P) rounds
// every rank has (transitively) heard from every other.
//   Messages: zero bytes. Scratch: none. Rounds: ceil(log2 P).
//   Any rank count.
#include "algos/dissemination.hpp"
#include "algos/patterns.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {

void append_dissemination(ScheduleBuilder& b) {
  const int p = b.nranks(), r = b.rank();
  for (int dist = 1; dist < p; dist <<= 1) {
    b.signal(mod(r + dist, p));
    b.wait_signal(mod(r - dist, p));
    b.end_round();
  }
}

namespace {

void build(ScheduleBuilder& b) { append_dissemination(b); }

}  // namespace

extern const Algorithm kBarrierDissemination{
    "dissemination", Collective::Barrier, "log2(P) rounds of zero-byte signals at distance 2^k",
    accept_all, build};

}  // namespace tutti::algos
