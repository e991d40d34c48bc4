// ProcessGroupTutti: torch.distributed's c10d process-group interface
// (torch 1.13) over tutti's C API, for CPU tensors.
//
// Every operation is queued to one worker thread per process group, which
// runs it with tutti's blocking calls in the order the ranks issued them
// (the order c10d guarantees across ranks). So an operation progresses
// while Python computes (DDP overlaps a bucket's allreduce with the rest of
// the backward pass) without the caller polling, and the tutti communicator
// is used by one thread only, as tutti requires. The Work a call returns
// completes when the worker has run it; its future (DDP's comm hooks wait on
// it) completes at the same time.
#pragma once

#include <mpi.h>
#include <tutti/tutti.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

namespace tutti_torch {

class ProcessGroupTutti : public c10d::ProcessGroup {
 public:
  class WorkTutti;

  // Collective over the ranks `world_ranks` of MPI_COMM_WORLD (this group's
  // members in group order; `rank` is this process's index there).
  ProcessGroupTutti(int rank, int size, const std::vector<int>& world_ranks, double timeout_s);
  ~ProcessGroupTutti() override;
  // Runs what is queued, then ends the worker and destroys the communicators
  // (before MPI_Finalize: tutti_torch's exit handler calls it on every group
  // still alive). Later operations fail.
  void shutdown();
  // Every group not shut down yet.
  static std::vector<ProcessGroupTutti*> live();

  const std::string getBackendName() const override { return "tutti"; }

  c10::intrusive_ptr<c10d::Work> broadcast(
      std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(
      std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(
      std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(
      at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(
      std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(
      std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(
      std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(
      at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_split_sizes,
      std::vector<int64_t>& input_split_sizes, const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors,
                                                    int dst_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors,
                                                    int src_rank, int tag) override;
  // dist.recv / dist.irecv without src: the Work's sourceRank() names the
  // sender (a rank of this group) once it completed.
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors,
                                               int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(
      const c10d::BarrierOptions& opts) override;

 private:
  // What the worker runs for one operation: a blocking call (returns
  // nullptr once done), or the start of a non-blocking one (send, recv:
  // returns its request, which the worker then tests between operations,
  // so that a send and a receive queued in either order cannot deadlock).
  // Throws on failure.
  using Run = std::function<tutti_request_t(tutti_comm_t)>;
  // Queues `run` and returns its Work; `outputs` become the future's value;
  // `source` (a receive from any source) is where `run` has tutti report the
  // sender, which the Work's sourceRank() reads.
  c10::intrusive_ptr<c10d::Work> enqueue(Run run, std::vector<at::Tensor> outputs,
                                         std::shared_ptr<int> source = nullptr);
  void run_worker();
  using Queued = std::pair<Run, c10::intrusive_ptr<WorkTutti>>;
  // Runs one queued operation (the caller holds the claim, busy_).
  void run_one(Queued& item);
  // Work::wait: while the worker is idle, the waiting thread runs the queue
  // itself, in order, up to and including `work`. A caller that waits at
  // once (async_op=False) then pays no hand-off between threads (two
  // wake-ups: tens of microseconds here, more than a small allreduce).
  void run_until(const WorkTutti* work);
  // Tests the started point-to-point operations; finishes those done, and
  // ends those older than TUTTI_TIMEOUT with its error (a receive whose
  // send never comes must not keep the group, and its shutdown, waiting).
  void test_started();

  MPI_Comm mpi_comm_ = MPI_COMM_NULL;
  tutti_comm_t comm_ = nullptr;
  std::mutex mutex_;
  std::condition_variable queued_;
  std::deque<Queued> queue_;
  // Set (under mutex_) by the thread that uses comm_ and started_: the
  // worker, or a waiting thread in run_until. One at a time, as tutti's
  // communicators require.
  bool busy_ = false;
  // Whoever holds busy_: started operations, their Work and when they end
  // with a timeout.
  struct Started {
    tutti_request_t request;
    c10::intrusive_ptr<WorkTutti> work;
    std::chrono::steady_clock::time_point deadline;
  };
  std::vector<Started> started_;
  double timeout_s_ = 0;  // TUTTI_TIMEOUT as this group's communicator read it; 0 = none
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace tutti_torch
