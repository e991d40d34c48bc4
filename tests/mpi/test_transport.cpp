// The transports underneath the schedules, driven directly: what a
// collective's correctness rests on but no single collective shows.
#include <catch2/catch.hpp>
#include <mpi.h>

#include <chrono>
#include <cstdint>

#include "mpi_harness.hpp"
#include "transport/mpi.hpp"

namespace tutti::testing {
namespace {

// Progresses `t` until both completions are done, for at most 30 s.
bool progress_until_done(Transport& t, const Completion& a, const Completion& b) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!(a.done && b.done) && std::chrono::steady_clock::now() < give_up) t.progress();
  return a.done && b.done;
}

}  // namespace

// Two collectives in flight between the same pair: rank 0 sends the second
// one's message first. Each receive must get its own collective's message,
// told apart by the sequence number in the tag. On a communicator split from
// the world the MPI transport once read MPI_TAG_UB from that communicator,
// found none (Open MPI keeps it on the world's duplicates only), kept 15 bits
// of each tag, the message index alone, and the first receive took the
// second collective's message (soak --soak-split: wrong sizes, wrong data).
TEST_CASE("the MPI transport keeps two collectives' messages apart on a split communicator",
          "[transport]") {
  const int me = world_rank();
  if (world_size() < 2) return;  // no pair
  MPI_Comm split = MPI_COMM_NULL;
  REQUIRE(MPI_Comm_split(MPI_COMM_WORLD, me < 2 ? 0 : MPI_UNDEFINED, me, &split) == MPI_SUCCESS);
  bool ok = true;
  if (split != MPI_COMM_NULL) {
    {
      MpiTransport t(split);
      const Tag first = collective_tag(7, 0), second = collective_tag(8, 0);
      int64_t first_value = 0, second_value = 0;
      Completion a, b;
      if (me == 1) {
        REQUIRE(t.recv(0, first, &first_value, sizeof first_value, MemoryType::Host, &a) == TUTTI_SUCCESS);
        REQUIRE(t.recv(0, second, &second_value, sizeof second_value, MemoryType::Host, &b) == TUTTI_SUCCESS);
      }
      MPI_Barrier(split);  // the receives are posted before the sends
      if (me == 0) {
        second_value = 8;
        first_value = 7;
        REQUIRE(t.send(1, second, &second_value, sizeof second_value, MemoryType::Host, &b) == TUTTI_SUCCESS);
        REQUIRE(t.send(1, first, &first_value, sizeof first_value, MemoryType::Host, &a) == TUTTI_SUCCESS);
      }
      REQUIRE(progress_until_done(t, a, b));
      CHECK(a.status == TUTTI_SUCCESS);
      CHECK(b.status == TUTTI_SUCCESS);
      if (me == 1) {
        CHECK(first_value == 7);
        CHECK(second_value == 8);
        ok = first_value == 7 && second_value == 8;
      }
    }
    MPI_Comm_free(&split);
  }
  CHECK(all_ranks(ok));
}

}  // namespace tutti::testing
