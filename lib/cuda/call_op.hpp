// One call on a communicator that involves CUDA: device buffers, or any call
// while a stream is set (tutti_comm_set_stream). It wraps the operation that
// does the communication (a schedule run, the MPI library's collective, a
// point-to-point message) and adds what CUDA needs around it:
//
//   1. Stream order in: with a stream set, the call records an event on that
//      stream and the inner operation starts only once the event has fired,
//      i.e. once the work the user enqueued before the call is done. The
//      host does not wait for it: the event is polled by progress, so a
//      tutti_i* call returns at once. Calls start in call order (StartOrder),
//      so a later call never overtakes one that waits for its stream.
//   2. Staging of whole buffers whose memory the inner operation cannot
//      use: host buffers of a call that runs on the device (mixed host and
//      device buffers), device buffers of the MPI library's collective (an
//      MPI that is not CUDA-aware). Copied in before it starts, out after.
//   3. Stream order out: tutti's device work for the call (kernels, copies,
//      all on tutti's stream) is covered by one event recorded when the
//      inner operation finishes. With a stream set, the user's stream waits
//      for that event (cudaStreamWaitEvent: no host wait) and the call is
//      complete; without one, the call completes once the event has fired.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cuda/runtime.hpp"
#include "cuda/start_order.hpp"
#include "engine/coll_args.hpp"
#include "engine/operation.hpp"
#include "engine/scratch.hpp"

namespace tutti::cuda {

struct CallSpec {
  // The user's buffers after the API's in-place normalisation.
  const void* in = nullptr;
  void* out = nullptr;
  MemoryType in_mem = MemoryType::Host, out_mem = MemoryType::Host;
  // Bytes of each (0 where absent); for in-place calls, of the buffer that
  // contains the other (see InPlaceLayout).
  size_t in_bytes = 0, out_bytes = 0;
  bool in_place = false;
  InPlaceLayout layout;
  // What the inner operation is given: buffers elsewhere are staged.
  MemoryType run_mem = MemoryType::Host;
  // Order the call against this stream (null: no stream set).
  cudaStream_t user_stream = nullptr;
};

// The spec of a collective call, from its arguments and this rank's buffers.
CallSpec collective_spec(const CollArgs& args, int rank, int nranks, const void* in, void* out,
                         MemoryType in_mem, MemoryType out_mem, MemoryType run_mem,
                         cudaStream_t user_stream);

class CallOp final : public Operation {
 public:
  // Starts the inner operation on the (possibly staged) buffers; may throw.
  using Starter = std::function<std::shared_ptr<Operation>(const void* in, void* out)>;

  // Records the stream event now (throws Error if it cannot); starting is
  // left to the first poll().
  CallOp(const OpLabel& label, const CallSpec& spec, Starter start, ScratchPool& host_pool,
         ScratchPool& device_pool, StartOrder& order);
  ~CallOp() override;

  bool advance() override;
  void cancel(Status why, const std::string& message) override;
  std::vector<int> waiting_for() const override;

 private:
  enum class Phase { Waiting, Running, Tail, Done };
  bool try_start();
  bool poll_inner();
  void stage_in(const void*& in, void*& out);
  void begin_tail();

  CallSpec spec_;
  Starter start_;
  ScratchPool& host_pool_;
  ScratchPool& device_pool_;
  StartOrder& order_;
  uint64_t ticket_ = 0;
  Phase phase_ = Phase::Waiting;
  std::optional<Event> input_ready_;  // recorded on the user's stream
  std::optional<Event> tail_;         // recorded on tutti's stream
  std::shared_ptr<Operation> inner_;
  NotedErrors errors_;  // of this call's device work (runtime.hpp)
  // Staging: temporaries, and the copies back to the user's buffers.
  ScratchLease temp_in_, temp_out_;
  struct CopyBack {
    void* dst;
    MemoryType dst_mem;
    const void* src;
    size_t bytes;
  };
  std::optional<CopyBack> copy_back_;
  bool device_work_ = false;
};

}  // namespace tutti::cuda
