// The UCX transport's settings that need no peers: which messages it
// acknowledges when the user set UCX_RNDV_THRESH (transport/ucx.hpp).
#include <catch2/catch.hpp>

#include "tutti_config.h"
#if TUTTI_HAVE_UCX
#include "model/machine.hpp"
#include "transport/ucx.hpp"

namespace tutti {

TEST_CASE("a user's UCX_RNDV_THRESH sets where acknowledgements start", "[config]") {
  constexpr size_t kAck = UcxTransport::kAckBytes;
  CHECK(UcxTransport::ack_bytes_for("8192") == 8192);
  CHECK(UcxTransport::ack_bytes_for("8k") == 8192);
  CHECK(UcxTransport::ack_bytes_for("8KB") == 8192);
  CHECK(UcxTransport::ack_bytes_for("1mb") == kAck);  // rendezvous only above: kAck covers it
  CHECK(UcxTransport::ack_bytes_for("inf") == kAck);
  CHECK(UcxTransport::ack_bytes_for("0") == 1);
  // UCX picks ("auto") or the value is unreadable: every message.
  CHECK(UcxTransport::ack_bytes_for("auto") == 1);
  CHECK(UcxTransport::ack_bytes_for("12parsecs") == 1);
  CHECK(UcxTransport::ack_bytes_for("") == 1);
}

// The cost model keeps its own copy of the rendezvous threshold between
// machines (model/machine.hpp does not depend on the transport): a send
// below it completes once injected, in the model as in UCX, which sends a
// message of the threshold's size by rendezvous.
TEST_CASE("the model's eager limit between nodes is the transport's", "[config]") {
  CHECK(model::Machine{}.inter.send_eager_bytes + 1 ==
        static_cast<double>(UcxTransport::kInterMachineRndvBytes));
}

}  // namespace tutti
#endif
