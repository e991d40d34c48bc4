// The CUDA IPC protocol of StagingTransport (lib/cuda/staging_transport.cpp,
// ipc_protocol.hpp) between two ranks of the in-process simulator, on the
// fake CUDA runtime (fake_cuda/): offers, the receiver's one copy, its
// acknowledgement, receives into host memory, what stays staged, a refused
// offer's fallback and a size mismatch. The same protocol on a GPU:
// scripts/gpu-check.sh (TUTTI_CUDA_IPC=1).
#include <catch2/catch.hpp>

#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <memory>
#include <vector>

#include "cuda/runtime.hpp"  // the fake one (fake_cuda/)
#include "cuda/staging_transport.hpp"
#include "fake_cuda.hpp"
#include "transport/sim.hpp"

using namespace tutti;
using tutti::cuda::IpcSetup;
using tutti::cuda::StagingTransport;
using tutti::cuda::StagingMode;

namespace {

constexpr size_t kLarge = 256 * 1024;  // offered (from 64 KiB)

// Two ranks of one node; every device message between them may go through IPC.
struct Pair {
  SimNetwork net;
  std::unique_ptr<StagingTransport> rank[2];
  explicit Pair(bool ipc = true, bool same_node = true,
                SimNetwork::Mode mode = SimNetwork::Mode::Eager)
      : net(2, mode) {
    net.accept_shorter(true);  // as UCX and MPI deliver an offer into a larger receive
    for (int r = 0; r < 2; ++r) {
      IpcSetup setup{ipc, {1, static_cast<char>(same_node)}};
      if (r == 1) setup.same_node = {static_cast<char>(same_node), 1};
      rank[r] = std::make_unique<StagingTransport>(std::make_unique<SimTransport>(net, r),
                                                   StagingMode::Auto, setup);
    }
  }
  // Progress both until every completion is done; false if they never are.
  bool run(const std::vector<Completion*>& cs) {
    for (int i = 0; i < 100000; ++i) {
      fake_cuda::process = 0;
      rank[0]->progress();
      fake_cuda::process = 1;
      rank[1]->progress();
      bool all = true;
      for (Completion* c : cs) all = all && c->done;
      if (all) return true;
    }
    return false;
  }
  // Posts rank 1's receive of `received_bytes` into `to`, then rank 0's
  // send of `bytes` from `from`, each as its own process.
  void post(Tag tag, const void* from, MemoryType from_mem, void* to, MemoryType to_mem,
            size_t bytes, size_t received_bytes, Completion& sent, Completion& received) {
    fake_cuda::process = 1;
    REQUIRE(rank[1]->recv(0, tag, to, received_bytes, to_mem, &received) == TUTTI_SUCCESS);
    fake_cuda::process = 0;
    REQUIRE(rank[0]->send(1, tag, from, bytes, from_mem, &sent) == TUTTI_SUCCESS);
  }
  // One message of `bytes` from rank 0's `from` to rank 1's `to`.
  bool message(Tag tag, const void* from, MemoryType from_mem, void* to, MemoryType to_mem,
               size_t bytes, Completion& sent, Completion& received) {
    post(tag, from, from_mem, to, to_mem, bytes, bytes, sent, received);
    return run({&sent, &received});
  }
};

// Fake device memory for one test, freed when it ends (also by a failed REQUIRE).
struct DeviceBuffer {
  char* data;
  explicit DeviceBuffer(size_t bytes) : data(static_cast<char*>(fake_cuda::device_alloc(bytes))) {}
  ~DeviceBuffer() { fake_cuda::device_free(data); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  operator char*() const { return data; }
};

std::vector<char> pattern(size_t bytes, int seed) {
  std::vector<char> p(bytes);
  for (size_t i = 0; i < bytes; ++i)
    p[i] = static_cast<char>((i * 131 + static_cast<size_t>(seed)) % 251);
  return p;
}

// A device buffer of rank 0 filled by work queued on its tutti stream (as
// a kernel would), which the offer must wait for.
void fill_on_stream(char* device, const std::vector<char>& data) {
  fake_cuda::process = 0;
  REQUIRE(cudaMemcpyAsync(device, data.data(), data.size(), cudaMemcpyHostToDevice,
                          cuda::stream()) == cudaSuccess);
}

}  // namespace

TEST_CASE("cuda ipc protocol: an offer carries a device message in one copy", "[cuda-host]") {
  const auto before = fake_cuda::counters();
  const DeviceBuffer a(1 << 20);
  const DeviceBuffer b(1 << 20);
  {
    Pair p;
    const std::vector<char> data = pattern(kLarge, 1);
    fill_on_stream(a + 4096, data);  // not yet there when the send is posted
    Completion sent, received;
    REQUIRE(p.message(collective_tag(1, 0), a + 4096, MemoryType::Cuda, b + 100, MemoryType::Cuda,
                      kLarge, sent, received));
    CHECK(sent.status == TUTTI_SUCCESS);
    CHECK(received.status == TUTTI_SUCCESS);
    CHECK(received.bytes == kLarge);
    CHECK(std::memcmp(b + 100, data.data(), kLarge) == 0);
    CHECK(p.rank[0]->ipc_counts().offered == 1);
    CHECK(p.rank[1]->ipc_counts().copied == 1);
    // Again from the same allocation: the handle stays open.
    const std::vector<char> again = pattern(kLarge, 2);
    fill_on_stream(a + 8192, again);
    Completion sent2, received2;
    REQUIRE(p.message(collective_tag(2, 0), a + 8192, MemoryType::Cuda, b, MemoryType::Cuda, kLarge,
                      sent2, received2));
    CHECK(std::memcmp(b, again.data(), kLarge) == 0);
    CHECK(fake_cuda::counters().handles_opened - before.handles_opened == 1);
    CHECK(fake_cuda::counters().handles_exported - before.handles_exported == 1);
    CHECK(p.rank[1]->ipc_counts().copied == 2);
    // A new allocation (here at whatever address): exported and mapped anew.
    const DeviceBuffer c(1 << 20);
    const std::vector<char> third = pattern(kLarge, 12);
    fill_on_stream(c, third);
    Completion sent3, received3;
    REQUIRE(p.message(collective_tag(2, 1), c, MemoryType::Cuda, b, MemoryType::Cuda, kLarge, sent3,
                      received3));
    CHECK(std::memcmp(b, third.data(), kLarge) == 0);
    CHECK(fake_cuda::counters().handles_exported - before.handles_exported == 2);
    CHECK(fake_cuda::counters().handles_opened - before.handles_opened == 2);
    CHECK(p.net.in_flight() == 0);
  }
  // Closed with the transport.
  const auto after = fake_cuda::counters();
  CHECK(after.handles_closed - before.handles_closed ==
        after.handles_opened - before.handles_opened);
}

TEST_CASE("cuda ipc protocol: a sender's buffer is free once its send completes", "[cuda-host]") {
  const DeviceBuffer a(kLarge);
  const DeviceBuffer b(kLarge);
  Pair p;
  const std::vector<char> data = pattern(kLarge, 11);
  fill_on_stream(a, data);
  Completion sent, received;
  p.post(collective_tag(11, 0), a, MemoryType::Cuda, b, MemoryType::Cuda, kLarge, kLarge, sent,
         received);
  REQUIRE(p.run({&sent}));
  std::memset(a, 0x5a, kLarge);  // the caller reuses its buffer at once
  REQUIRE(p.run({&received}));
  CHECK(std::memcmp(b, data.data(), kLarge) == 0);
  CHECK(p.rank[1]->ipc_counts().copied == 1);
}

TEST_CASE("cuda ipc protocol: a receive into host memory takes an offer", "[cuda-host]") {
  const DeviceBuffer a(kLarge);
  Pair p;
  const std::vector<char> data = pattern(kLarge, 3);
  fill_on_stream(a, data);
  std::vector<char> host(kLarge, 0);
  Completion sent, received;
  REQUIRE(p.message(collective_tag(3, 1), a, MemoryType::Cuda, host.data(), MemoryType::Host,
                    kLarge,
                    sent, received));
  CHECK(received.status == TUTTI_SUCCESS);
  CHECK(received.bytes == kLarge);
  CHECK(host == data);
  CHECK(p.rank[1]->ipc_counts().copied == 1);
  // And a host message into a watched host receive: the data itself.
  const std::vector<char> plain = pattern(kLarge, 4);
  Completion sent2, received2;
  REQUIRE(p.message(collective_tag(4, 1), plain.data(), MemoryType::Host, host.data(),
                    MemoryType::Host, kLarge, sent2, received2));
  CHECK(received2.status == TUTTI_SUCCESS);
  CHECK(host == plain);
  CHECK(p.rank[1]->ipc_counts().copied == 1);
}

TEST_CASE("cuda ipc protocol: small, point-to-point and unexportable messages stay staged",
          "[cuda-host]") {
  const DeviceBuffer a(kLarge);
  const DeviceBuffer b(kLarge);
  Pair p;
  const std::vector<char> data = pattern(kLarge, 5);
  fill_on_stream(a, data);
  Completion s1, r1;  // below 64 KiB
  REQUIRE(p.message(collective_tag(5, 0), a, MemoryType::Cuda, b, MemoryType::Cuda, 4096, s1, r1));
  CHECK(std::memcmp(b, data.data(), 4096) == 0);
  Completion s2, r2;  // a user message (any source, any size)
  REQUIRE(p.message(user_tag(9), a, MemoryType::Cuda, b, MemoryType::Cuda, kLarge, s2, r2));
  CHECK(std::memcmp(b, data.data(), kLarge) == 0);
  CHECK(p.rank[0]->ipc_counts().offered == 0);
  // Memory the driver cannot export (here: not a registered allocation).
  std::vector<char> unexportable = pattern(kLarge, 6);
  Completion s3, r3;
  REQUIRE(p.message(collective_tag(6, 0), unexportable.data(), MemoryType::Cuda, b,
                    MemoryType::Cuda, kLarge, s3, r3));
  CHECK(r3.status == TUTTI_SUCCESS);
  CHECK(std::memcmp(b, unexportable.data(), kLarge) == 0);
  CHECK(p.rank[0]->ipc_counts().not_exported == 1);
  CHECK(p.rank[0]->ipc_counts().offered == 0);
  CHECK(p.rank[1]->ipc_counts().copied == 0);
}

TEST_CASE("cuda ipc protocol: off, or across nodes, device messages are staged", "[cuda-host]") {
  const DeviceBuffer a(kLarge);
  const DeviceBuffer b(kLarge);
  const std::vector<char> data = pattern(kLarge, 7);
  for (const auto& [ipc, same_node] : {std::pair{false, true}, std::pair{true, false}}) {
    Pair p(ipc, same_node);
    fill_on_stream(a, data);
    Completion sent, received;
    REQUIRE(p.message(collective_tag(7, 0), a, MemoryType::Cuda, b, MemoryType::Cuda, kLarge, sent,
                      received));
    CHECK(received.status == TUTTI_SUCCESS);
    CHECK(std::memcmp(b, data.data(), kLarge) == 0);
    CHECK(p.rank[0]->ipc_counts().offered == 0);
    std::memset(b, 0, kLarge);
  }
}

TEST_CASE("cuda ipc protocol: a refused offer's data comes staged, and no offer follows",
          "[cuda-host]") {
  const DeviceBuffer a(kLarge);
  const DeviceBuffer b(kLarge);
  Pair p;
  fake_cuda::refuse_ipc_open = true;
  const std::vector<char> data = pattern(kLarge, 8);
  fill_on_stream(a, data);
  Completion sent, received;
  const bool done = p.message(collective_tag(8, 0), a, MemoryType::Cuda, b, MemoryType::Cuda,
                              kLarge,
                              sent, received);
  fake_cuda::refuse_ipc_open = false;
  REQUIRE(done);
  CHECK(sent.status == TUTTI_SUCCESS);
  CHECK(received.status == TUTTI_SUCCESS);
  CHECK(received.bytes == kLarge);
  CHECK(std::memcmp(b, data.data(), kLarge) == 0);
  CHECK(p.rank[1]->ipc_counts().refused == 1);
  CHECK(p.rank[0]->ipc_counts().refused == 1);
  CHECK(p.rank[0]->ipc_counts().offered == 0);
  // The next message to that rank is staged at once.
  const auto exported = fake_cuda::counters().handles_exported;
  const std::vector<char> next = pattern(kLarge, 9);
  fill_on_stream(a, next);
  Completion sent2, received2;
  REQUIRE(p.message(collective_tag(9, 0), a, MemoryType::Cuda, b, MemoryType::Cuda, kLarge, sent2,
                    received2));
  CHECK(std::memcmp(b, next.data(), kLarge) == 0);
  CHECK(fake_cuda::counters().handles_exported == exported);
  CHECK(p.rank[1]->ipc_counts().refused == 1);
  CHECK(p.net.in_flight() == 0);
}

// The GPU check's failure of 2026-11-28: a sender frees a buffer the
// receiver still maps and allocates a new one at the same address (the
// benchmark's fresh buffers). The receiver closes the old mapping and opens
// the new one: copied through IPC, not refused.
TEST_CASE("cuda ipc protocol: a new allocation at a mapped address is opened anew",
          "[cuda-host]") {
  const DeviceBuffer a(kLarge), b(kLarge);
  Pair p;
  const std::vector<char> first = pattern(kLarge, 31), second = pattern(kLarge, 32);
  fill_on_stream(a, first);
  Completion sent, received;
  REQUIRE(p.message(collective_tag(31, 0), a, MemoryType::Cuda, b, MemoryType::Cuda, kLarge, sent,
                    received));
  CHECK(std::memcmp(b, first.data(), kLarge) == 0);
  fake_cuda::device_reallocate_in_place(a);
  fill_on_stream(a, second);
  Completion sent2, received2;
  REQUIRE(p.message(collective_tag(32, 0), a, MemoryType::Cuda, b, MemoryType::Cuda, kLarge, sent2,
                    received2));
  INFO(received2.error);
  CHECK(received2.status == TUTTI_SUCCESS);
  CHECK(sent2.status == TUTTI_SUCCESS);
  CHECK(std::memcmp(b, second.data(), kLarge) == 0);
  CHECK(p.rank[1]->ipc_counts().copied == 2);
  CHECK(p.rank[1]->ipc_counts().refused == 0);
  CHECK(p.net.in_flight() == 0);
}

// Both ranks offer each other a message under the same tag (a ring's step
// on two ranks) and both refuse: each direction then carries an
// acknowledgement (for the peer's offer) and refused data (for its own)
// for the same message, which must not match each other's receives.
TEST_CASE("cuda ipc protocol: offers refused both ways under one tag keep data and acks apart",
          "[cuda-host]") {
  const DeviceBuffer send0(kLarge), recv0(kLarge), send1(kLarge), recv1(kLarge);
  Pair p;
  fake_cuda::refuse_ipc_open = true;
  const std::vector<char> data0 = pattern(kLarge, 21), data1 = pattern(kLarge, 22);
  fill_on_stream(send0, data0);
  fake_cuda::process = 1;
  REQUIRE(cudaMemcpyAsync(send1.data, data1.data(), kLarge, cudaMemcpyHostToDevice,
                          cuda::stream()) == cudaSuccess);
  const Tag tag = collective_tag(21, 3);
  Completion sent0, received0, sent1, received1;
  for (int r = 0; r < 2; ++r) {
    fake_cuda::process = r;
    REQUIRE(p.rank[r]->recv(1 - r, tag, r == 0 ? recv0 : recv1, kLarge, MemoryType::Cuda,
                            r == 0 ? &received0 : &received1) == TUTTI_SUCCESS);
    REQUIRE(p.rank[r]->send(1 - r, tag, r == 0 ? send0 : send1, kLarge, MemoryType::Cuda,
                            r == 0 ? &sent0 : &sent1) == TUTTI_SUCCESS);
  }
  const bool done = p.run({&sent0, &received0, &sent1, &received1});
  fake_cuda::refuse_ipc_open = false;
  REQUIRE(done);
  for (const Completion* c : {&sent0, &received0, &sent1, &received1}) {
    INFO(c->error);
    CHECK(c->status == TUTTI_SUCCESS);
  }
  CHECK(received0.bytes == kLarge);
  CHECK(received1.bytes == kLarge);
  CHECK(std::memcmp(recv1, data0.data(), kLarge) == 0);
  CHECK(std::memcmp(recv0, data1.data(), kLarge) == 0);
  CHECK(p.rank[0]->ipc_counts().offered == 0);
  CHECK(p.rank[1]->ipc_counts().offered == 0);
  CHECK(p.net.in_flight() == 0);
}

TEST_CASE("cuda ipc protocol: an offer for a receive of another size fails both sides",
          "[cuda-host]") {
  const DeviceBuffer a(kLarge);
  const DeviceBuffer b(kLarge);
  Pair p;
  Completion sent, received;
  p.post(collective_tag(10, 0), a, MemoryType::Cuda, b, MemoryType::Cuda, kLarge, kLarge / 2, sent,
         received);
  REQUIRE(p.run({&sent, &received}));
  CHECK(received.status == TUTTI_ERR_MISMATCH);
  CHECK(sent.status == TUTTI_ERR_MISMATCH);
  CHECK(sent.error.find("could not copy") != std::string::npos);
  p.run({});
  CHECK(p.net.in_flight() == 0);
}

TEST_CASE("cuda ipc protocol: cancelled receives and offers let go of everything", "[cuda-host]") {
  const DeviceBuffer a(kLarge);
  std::vector<char> host(kLarge, 7);
  {
    Pair p;
    // A watched receive into host memory, cancelled before anything came:
    // answered, and the buffer untouched.
    Completion received;
    fake_cuda::process = 1;
    REQUIRE(p.rank[1]->recv(0, collective_tag(12, 0), host.data(), kLarge, MemoryType::Host,
                            &received) == TUTTI_SUCCESS);
    p.rank[1]->cancel(&received);
    REQUIRE(p.run({&received}));
    CHECK(received.status != TUTTI_SUCCESS);
    CHECK(host == std::vector<char>(kLarge, 7));
    // An offer nobody takes (the peer never receives), cancelled: answered,
    // its acknowledgement's receive withdrawn.
    Completion sent;
    fake_cuda::process = 0;
    REQUIRE(p.rank[0]->send(1, collective_tag(13, 0), a, kLarge, MemoryType::Cuda, &sent) ==
            TUTTI_SUCCESS);
    p.run({});  // the offer goes out once its data is ready
    REQUIRE_FALSE(sent.done);
    p.rank[0]->cancel(&sent);
    REQUIRE(p.run({&sent}));
    CHECK(sent.status != TUTTI_SUCCESS);
    p.run({});
    CHECK(p.rank[0]->staged_in_flight() == 0);
    CHECK(p.rank[1]->staged_in_flight() == 0);
    // An offer in flight when the transports go: destroyed without hanging.
    Completion late;
    fake_cuda::process = 0;
    REQUIRE(p.rank[0]->send(1, collective_tag(14, 0), a, kLarge, MemoryType::Cuda, &late) ==
            TUTTI_SUCCESS);
    p.run({});
  }
}

TEST_CASE("cuda ipc protocol: a mapping is closed only after the copies from it", "[cuda-host]") {
  // More senders' allocations than the cache keeps open, all offered at once:
  // the first mappings are evicted while later offers arrive.
  constexpr int kAllocations = 70;
  constexpr size_t kBytes = 64 * 1024;
  const auto before = fake_cuda::counters();
  std::vector<std::unique_ptr<DeviceBuffer>> from, to;
  for (int i = 0; i < kAllocations; ++i) {
    from.push_back(std::make_unique<DeviceBuffer>(kBytes));
    to.push_back(std::make_unique<DeviceBuffer>(kBytes));
    std::memset(*from.back(), i + 1, kBytes);
  }
  {
    Pair p;
    std::vector<Completion> sent(kAllocations), received(kAllocations);
    std::vector<Completion*> all;
    for (int i = 0; i < kAllocations; ++i) {
      p.post(collective_tag(20, static_cast<uint32_t>(i)), *from[i], MemoryType::Cuda, *to[i],
             MemoryType::Cuda, kBytes, kBytes, sent[i], received[i]);
      all.push_back(&sent[i]);
      all.push_back(&received[i]);
    }
    REQUIRE(p.run(all));
    int wrong = 0;
    for (int i = 0; i < kAllocations; ++i)
      wrong += received[i].status != TUTTI_SUCCESS || to[i]->data[0] != static_cast<char>(i + 1) ||
               to[i]->data[kBytes - 1] != static_cast<char>(i + 1);
    CHECK(wrong == 0);
    CHECK(p.rank[1]->ipc_counts().copied == kAllocations);
  }
  const auto after = fake_cuda::counters();
  CHECK(after.handles_opened - before.handles_opened == kAllocations);
  CHECK(after.handles_closed - before.handles_closed == kAllocations);
  CHECK(after.closed_while_copying == before.closed_while_copying);
}

// Rounds of exchanges as a schedule makes them: both ranks send each other
// messages under the same tags (a ring's step on two ranks), small ones
// staged and large ones offered, device or host memory on either side,
// posted in either order, some rounds refusing every open, and the
// senders' allocations freed and allocated again at the same address
// between rounds. Every message must arrive whole, every call complete.
TEST_CASE("cuda ipc protocol: random exchanges both ways, refusals and reallocations",
          "[cuda-host]") {
  constexpr size_t kSlot = 256 * 1024 + 64;
  constexpr int kMaxMessages = 12;
  const size_t sizes[] = {8, 1000, 64 * 1024, 64 * 1024 + 8, 256 * 1024 + 13};
  for (unsigned seed = 1; seed <= 32; ++seed) {
    std::mt19937 rng(seed);
    // Odd seeds: a send completes only once it is received (rendezvous).
    const auto mode = seed % 2 ? SimNetwork::Mode::Rendezvous : SimNetwork::Mode::Eager;
    const DeviceBuffer dev_send0(kSlot * kMaxMessages), dev_send1(kSlot * kMaxMessages);
    const DeviceBuffer dev_recv0(kSlot * kMaxMessages), dev_recv1(kSlot * kMaxMessages);
    const char* dev_send[2] = {dev_send0, dev_send1};
    char* dev_recv[2] = {dev_recv0, dev_recv1};
    std::vector<char> host_send[2], host_recv[2];
    for (int r = 0; r < 2; ++r) {
      host_send[r].resize(kSlot * kMaxMessages);
      host_recv[r].resize(kSlot * kMaxMessages);
    }
    Pair p(true, true, mode);
    for (uint32_t round = 0; round < 6; ++round) {
      INFO("seed " << seed << " round " << round);
      const int n = 1 + static_cast<int>(rng() % kMaxMessages);
      struct Message {
        size_t bytes;
        bool send_on_device, recv_on_device;
        std::vector<char> data;
        Completion sent, received;
      };
      std::vector<Message> msgs[2];  // msgs[r]: what rank r sends
      for (int r = 0; r < 2; ++r) {
        msgs[r] = std::vector<Message>(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) {
          Message& m = msgs[r][static_cast<size_t>(i)];
          m.bytes = sizes[rng() % std::size(sizes)];
          m.send_on_device = rng() % 4 != 0;
          m.recv_on_device = rng() % 4 != 0;
          m.data = pattern(m.bytes, static_cast<int>(seed * 1000 + round * 100 + r * 50) + i);
          const size_t at = static_cast<size_t>(i) * kSlot;
          fake_cuda::process = r;
          if (m.send_on_device)
            REQUIRE(cudaMemcpyAsync(const_cast<char*>(dev_send[r]) + at, m.data.data(), m.bytes,
                                    cudaMemcpyHostToDevice, cuda::stream()) == cudaSuccess);
          else
            std::memcpy(host_send[r].data() + at, m.data.data(), m.bytes);
        }
      }
      fake_cuda::refuse_ipc_open = rng() % 4 == 0;
      std::vector<Completion*> all;
      for (int r = 0; r < 2; ++r) {
        fake_cuda::process = r;
        const bool sends_first = rng() % 2 == 0;
        for (int pass = 0; pass < 2; ++pass)
          for (int i = 0; i < n; ++i) {
            const size_t at = static_cast<size_t>(i) * kSlot;
            const Tag tag = collective_tag(100 + round, static_cast<uint32_t>(i));
            if ((pass == 0) == sends_first) {
              Message& m = msgs[r][static_cast<size_t>(i)];
              const void* from = m.send_on_device ? static_cast<const void*>(dev_send[r] + at)
                                                  : host_send[r].data() + at;
              REQUIRE(p.rank[r]->send(1 - r, tag, from, m.bytes,
                                      m.send_on_device ? MemoryType::Cuda : MemoryType::Host,
                                      &m.sent) == TUTTI_SUCCESS);
              all.push_back(&m.sent);
            } else {
              Message& m = msgs[1 - r][static_cast<size_t>(i)];  // the peer's message to r
              void* into = m.recv_on_device ? static_cast<void*>(dev_recv[r] + at)
                                            : host_recv[r].data() + at;
              REQUIRE(p.rank[r]->recv(1 - r, tag, into, m.bytes,
                                      m.recv_on_device ? MemoryType::Cuda : MemoryType::Host,
                                      &m.received) == TUTTI_SUCCESS);
              all.push_back(&m.received);
            }
          }
      }
      const bool done = p.run(all);
      fake_cuda::refuse_ipc_open = false;
      REQUIRE(done);
      fake_cuda::drain();
      int wrong = 0;
      std::string first;
      for (int r = 0; r < 2; ++r)
        for (int i = 0; i < n; ++i) {
          const Message& m = msgs[r][static_cast<size_t>(i)];
          const size_t at = static_cast<size_t>(i) * kSlot;
          const char* got = m.recv_on_device ? dev_recv[1 - r] + at : host_recv[1 - r].data() + at;
          const bool ok = m.sent.status == TUTTI_SUCCESS && m.received.status == TUTTI_SUCCESS &&
                          m.received.bytes == m.bytes &&
                          std::memcmp(got, m.data.data(), m.bytes) == 0;
          if (!ok && wrong++ == 0)
            first = str("rank ", r, " message ", i, " of ", m.bytes, " bytes: ", m.sent.error,
                        " / ", m.received.error);
        }
      INFO(first);
      CHECK(wrong == 0);
      p.run({});
      CHECK(p.net.in_flight() == 0);
      // Freed and allocated again at the same address, as cudaMalloc may.
      for (int r = 0; r < 2; ++r)
        if (rng() % 3 == 0) fake_cuda::device_reallocate_in_place(const_cast<char*>(dev_send[r]));
    }
  }
}
