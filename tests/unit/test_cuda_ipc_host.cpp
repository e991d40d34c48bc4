// The parts of the CUDA IPC protocol that need no GPU (cuda/ipc_protocol.hpp):
// the setting, how a receiver tells an offer from data, the
// acknowledgement's tag, and the cache of opened handles. The protocol
// itself runs in StagingTransport and is checked on a device
// (scripts/gpu-check.sh runs the CUDA tests with TUTTI_CUDA_IPC=1).
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "cuda/ipc_protocol.hpp"
#include "tutti/tutti.h"

using namespace tutti;
using namespace tutti::cuda;

TEST_CASE("cuda ipc: TUTTI_CUDA_IPC values", "[cuda-host]") {
  CHECK(ipc_wanted_from_text(nullptr) == false);  // off until it has run on a GPU
  CHECK(ipc_wanted_from_text("") == false);
  CHECK(ipc_wanted_from_text("0") == false);
  CHECK(ipc_wanted_from_text("off") == false);
  CHECK(ipc_wanted_from_text("1") == true);
  CHECK(ipc_wanted_from_text("yes") == true);
  CHECK_FALSE(ipc_wanted_from_text("2").has_value());
  CHECK_FALSE(ipc_wanted_from_text("auto").has_value());
}

TEST_CASE("cuda ipc: a receiver tells an offer from data", "[cuda-host]") {
  Offer sent;
  sent.magic = kOfferMagic;
  sent.bytes = 1 << 20;
  sent.offset = 4096;
  sent.device = 3;
  sent.handle[0] = 'h';
  sent.handle[63] = 'z';
  std::vector<char> landing(1 << 20, 0);
  std::memcpy(landing.data(), &sent, sizeof sent);
  Offer got;
  REQUIRE(is_offer(landing.data(), sizeof(Offer), landing.size(), &got));
  CHECK(got.bytes == sent.bytes);
  CHECK(got.offset == 4096);
  CHECK(got.device == 3);
  CHECK(got.handle == sent.handle);
  // The whole message arrived: data, whatever its first bytes hold.
  CHECK_FALSE(is_offer(landing.data(), landing.size(), landing.size(), &got));
  // A message of exactly an offer's size for a receive of that size is data.
  CHECK_FALSE(is_offer(landing.data(), sizeof(Offer), sizeof(Offer), &got));
  // A short message without the magic is data too (the engine then reports
  // the size mismatch).
  landing[0] ^= 1;
  CHECK_FALSE(is_offer(landing.data(), sizeof(Offer), landing.size(), &got));
  // Offers are for messages an offer is much smaller than.
  CHECK(kIpcMinBytes > 100 * sizeof(Offer));
}

TEST_CASE("cuda ipc: which tags may go through IPC, and the acknowledgement's", "[cuda-host]") {
  CHECK_FALSE(ipc_tag_allowed(user_tag(7)));  // point-to-point: any source, any size
  const Tag tag = collective_tag(12345, 17);
  REQUIRE(ipc_tag_allowed(tag));
  const Tag ack = ipc_ack_tag(tag);
  CHECK(ack != tag);
  CHECK_FALSE(ipc_tag_allowed(ack));
  CHECK_FALSE(is_user_tag(ack));
  // No message of a schedule with fewer than 2^19 messages per pair in one
  // collective carries an acknowledgement's tag, in either direction.
  for (uint32_t index : {0u, 1u, 17u, (1u << 19) - 1}) {
    CHECK(collective_tag(12345, index) != ack);
    CHECK(ipc_ack_tag(collective_tag(12345, index)) != collective_tag(12345, index));
  }
  CHECK(ipc_ack_tag(collective_tag(12345, 17)) != ipc_ack_tag(collective_tag(12346, 17)));
  // A refused offer's data: a tag of its own, never offered again; "send
  // the data" is no status a copy can end with.
  CHECK(ipc_data_tag(tag) != tag);
  CHECK_FALSE(ipc_tag_allowed(ipc_data_tag(tag)));
  // ... and not the acknowledgement's: one direction may carry both for one
  // message (two ranks refusing each other's offers under one tag).
  for (uint32_t index : {0u, 17u, (1u << 18) - 1}) {
    const Tag t = collective_tag(12345, index);
    REQUIRE(ipc_tag_allowed(t));
    CHECK(ipc_data_tag(t) != ipc_ack_tag(t));
    for (uint32_t other : {0u, 17u, (1u << 18) - 1})
      CHECK(ipc_data_tag(t) != ipc_ack_tag(collective_tag(12345, other)));
  }
  // Indexes from 2^18 stay staged: their tags could be an ack's or data's.
  CHECK_FALSE(ipc_tag_allowed(collective_tag(12345, 1u << 18)));
  CHECK(kIpcAckSendData < 0);
  CHECK(TUTTI_SUCCESS == 0);
}

TEST_CASE("cuda ipc: opened handles are cached, bounded and closed", "[cuda-host]") {
  std::vector<std::string> log;
  std::vector<char> memory(16);
  int next = 0;
  auto open = [&](int peer, const IpcMappings::Handle& h,
                  std::string& why) -> IpcMappings::Opened {
    if (h[0] == 'x') {
      why = "cannot open";
      return {};
    }
    log.push_back("open " + std::to_string(peer) + h[0]);
    return {&memory[static_cast<size_t>(next++)], false};
  };
  auto close = [&](void* base) {
    log.push_back("close " + std::to_string(static_cast<char*>(base) - memory.data()));
  };
  auto handle = [](char c) {
    IpcMappings::Handle h{};
    h[0] = c;
    return h;
  };
  std::string why;
  {
    IpcMappings maps(open, close, 2);
    void* a = maps.map(1, handle('a'), why);
    CHECK(maps.map(1, handle('a'), why) == a);  // opened once
    void* b = maps.map(2, handle('a'), why);    // the same bytes from another rank
    CHECK(b != a);
    CHECK(maps.open_count() == 2);
    CHECK(maps.map(1, handle('a'), why) == a);  // a used last: b goes first
    CHECK(maps.map(1, handle('c'), why) != nullptr);
    CHECK(maps.open_count() == 2);
    CHECK(log == std::vector<std::string>{"open 1a", "open 2a", "open 1c", "close 1"});
    // A handle that cannot be opened: null, why, nothing cached or evicted.
    CHECK(maps.map(1, handle('x'), why) == nullptr);
    CHECK(why == "cannot open");
    CHECK(maps.open_count() == 2);
    CHECK(maps.opened_total() == 3);
  }
  // Destroyed: everything still open is closed.
  REQUIRE(log.size() == 6);
  CHECK(((log[4] == "close 0" && log[5] == "close 2") || (log[4] == "close 2" && log[5] == "close 0")));
}

// A sender freed a buffer this rank maps and allocated another over the
// same addresses: opening its handle finds them in use until the old
// mapping is closed.
TEST_CASE("cuda ipc: an open that finds its addresses in use closes the mappings and retries",
          "[cuda-host]") {
  std::vector<std::string> log;
  std::vector<char> memory(16);
  bool old_mapped = false;
  int opens = 0;
  auto open = [&](int, const IpcMappings::Handle& h, std::string& why) -> IpcMappings::Opened {
    ++opens;
    if (h[0] == 'n' && old_mapped) {
      why = "already mapped";
      return {nullptr, true};
    }
    if (h[0] == 'o') old_mapped = true;
    if (h[0] == 'y') {  // in use by something no mapping here holds
      why = "already mapped";
      return {nullptr, true};
    }
    return {&memory[static_cast<size_t>(h[0] % 16)], false};
  };
  auto close = [&](void* base) {
    if (base == &memory['o' % 16]) old_mapped = false;
    log.push_back("close");
  };
  auto handle = [](char c) {
    IpcMappings::Handle h{};
    h[0] = c;
    return h;
  };
  std::string why;
  IpcMappings maps(open, close, 8);
  REQUIRE(maps.map(0, handle('o'), why) != nullptr);
  REQUIRE(maps.map(1, handle('p'), why) != nullptr);
  void* fresh = maps.map(0, handle('n'), why);
  CHECK(fresh == &memory['n' % 16]);
  CHECK(why.empty());
  CHECK(log.size() == 2);  // both closed: the one in the way need not be the sender's
  CHECK(maps.open_count() == 1);
  CHECK(maps.reopened_total() == 1);
  // Still in use after closing everything: null, why, tried twice only.
  opens = 0;
  CHECK(maps.map(0, handle('y'), why) == nullptr);
  CHECK(why == "already mapped");
  CHECK(opens == 2);
  CHECK(maps.open_count() == 0);
}

TEST_CASE("cuda ipc: exported handles are kept per allocation", "[cuda-host]") {
  int exported = 0;
  auto exporter = [&](uintptr_t start, IpcExports::Handle& out) {
    if (start == 0xbad) return false;
    ++exported;
    out = {};
    out[0] = static_cast<char>(start);
    return true;
  };
  IpcExports exports(exporter, 2);
  IpcExports::Handle h{};
  REQUIRE(exports.handle_of(0x10, 1, h));
  CHECK(h[0] == 0x10);
  REQUIRE(exports.handle_of(0x10, 1, h));
  CHECK(exported == 1);  // kept
  REQUIRE(exports.handle_of(0x10, 2, h));
  CHECK(exported == 2);  // a new allocation at the same address
  REQUIRE(exports.handle_of(0x20, 3, h));
  CHECK(exports.size() == 2);  // (0x10, 1) was the least recently used
  REQUIRE(exports.handle_of(0x10, 1, h));
  CHECK(exported == 4);
  CHECK_FALSE(exports.handle_of(0xbad, 4, h));  // not exportable: not kept
  CHECK(exports.size() == 2);
}
