#include "process_group.hpp"

#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

namespace tutti_torch {
namespace {

tutti_datatype_t tutti_dtype(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return TUTTI_FLOAT32;
    case at::kDouble: return TUTTI_FLOAT64;
    case at::kHalf: return TUTTI_FLOAT16;
    case at::kBFloat16: return TUTTI_BFLOAT16;
    case at::kChar: return TUTTI_INT8;
    case at::kByte: return TUTTI_UINT8;
    case at::kInt: return TUTTI_INT32;
    case at::kLong: return TUTTI_INT64;
    default:
      TORCH_CHECK(false, "tutti: no tutti datatype for tensors of type ", t.scalar_type(),
                  " (float32/64, float16, bfloat16, int8/32/64, uint8)");
  }
}

tutti_op_t tutti_op(const c10d::ReduceOp& op) {
  switch (op) {
    case c10d::ReduceOp::SUM: return TUTTI_SUM;
    case c10d::ReduceOp::PRODUCT: return TUTTI_PROD;
    case c10d::ReduceOp::MIN: return TUTTI_MIN;
    case c10d::ReduceOp::MAX: return TUTTI_MAX;
    case c10d::ReduceOp::AVG: return TUTTI_AVG;
    default: TORCH_CHECK(false, "tutti: reduce op ", static_cast<int>(op), " is not supported");
  }
}

// The checks every tensor passes: CPU memory, contiguous (tutti moves flat
// buffers; a non-contiguous tensor is refused rather than copied behind the
// caller's back, so that in-place results land where the caller looks).
void check_tensor(const at::Tensor& t, const char* what) {
  TORCH_CHECK(t.device().is_cpu(), "tutti: ", what, " must be a CPU tensor (got ", t.device(),
              ")");
  TORCH_CHECK(t.is_contiguous(), "tutti: ", what, " must be contiguous (call .contiguous())");
  tutti_dtype(t);
}

const at::Tensor& single(const std::vector<at::Tensor>& tensors, const char* what) {
  TORCH_CHECK(tensors.size() == 1, "tutti: ", what, " takes exactly one tensor per process (got ",
              tensors.size(), ")");
  check_tensor(tensors[0], what);
  return tensors[0];
}

void check_same(const at::Tensor& a, const at::Tensor& b, const char* what) {
  check_tensor(b, what);
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "tutti: ", what, ": tensors of types ",
              a.scalar_type(), " and ", b.scalar_type());
}

void ok(int status, const char* what) {
  if (status == TUTTI_SUCCESS) return;
  throw std::runtime_error(std::string("tutti ") + what + " failed (" +
                           tutti_strerror(status) + "): " + tutti_last_error());
}

size_t count(const at::Tensor& t) { return static_cast<size_t>(t.numel()); }

// The tensors' elements one after another, in one new buffer.
at::Tensor flatten(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> views;
  for (const at::Tensor& t : tensors) views.push_back(t.reshape({-1}));
  return at::cat(views);
}

// The reverse: `flat`'s elements back into `tensors`, one after another.
void unflatten(const at::Tensor& flat, const std::vector<at::Tensor>& tensors) {
  int64_t offset = 0;
  for (const at::Tensor& t : tensors) {
    t.view({-1}).copy_(flat.narrow(0, offset, t.numel()));
    offset += t.numel();
  }
}

// A per-rank list of `size` tensors of `like`'s type and size (all_gather's
// outputs, scatter's inputs, ...); `what` names them in errors.
std::vector<at::Tensor> rank_list(const std::vector<std::vector<at::Tensor>>& lists, int size,
                                  const at::Tensor& like, const char* what) {
  TORCH_CHECK(lists.size() == 1 && static_cast<int>(lists[0].size()) == size, "tutti: ", what,
              " must be one list of ", size, " tensors");
  for (const at::Tensor& t : lists[0]) {
    check_same(like, t, what);
    TORCH_CHECK(t.numel() == like.numel(), "tutti: ", what, " must each hold ", like.numel(),
                " elements");
  }
  return lists[0];
}

// A blocking call as a ProcessGroupTutti::Run.
template <typename F>
std::function<tutti_request_t(tutti_comm_t)> blocking(F call) {
  return [call = std::move(call)](tutti_comm_t c) -> tutti_request_t {
    call(c);
    return nullptr;
  };
}

}  // namespace

// Completes from the worker thread through the base class's completion
// (wait, isCompleted and exception then report it) and its future.
class ProcessGroupTutti::WorkTutti : public c10d::Work {
 public:
  WorkTutti(ProcessGroupTutti* group, std::vector<at::Tensor> outputs,
            std::shared_ptr<int> source)
      : group_(group),
        outputs_(std::move(outputs)),
        source_(std::move(source)),
        future_(c10::make_intrusive<at::ivalue::Future>(
            c10::ListType::create(c10::TensorType::get()))) {}
  // Written by the worker before done(); read after wait() returned.
  int sourceRank() const override {
    TORCH_CHECK(source_, "tutti: sourceRank() is only known for a receive from any source");
    TORCH_CHECK(*source_ >= 0, "tutti: the receive from any source has not completed");
    return *source_;
  }
  std::vector<at::Tensor> result() override { return outputs_; }
  // A work not completed is still queued or running, so its group is alive
  // (shutdown runs the queue to its end).
  bool wait(std::chrono::milliseconds timeout) override {
    if (!isCompleted()) group_->run_until(this);
    return c10d::Work::wait(timeout);
  }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  void done(std::exception_ptr error) {
    if (error)
      future_->setError(error);
    else
      future_->markCompleted(c10::IValue(outputs_));
    finish(error);
  }

 private:
  ProcessGroupTutti* group_;
  std::vector<at::Tensor> outputs_;
  std::shared_ptr<int> source_;
  c10::intrusive_ptr<at::ivalue::Future> future_;
};

namespace {

std::mutex live_mutex;
std::vector<ProcessGroupTutti*> live_groups;

}  // namespace

ProcessGroupTutti::ProcessGroupTutti(int rank, int size, const std::vector<int>& world_ranks,
                                     double timeout_s)
    : c10d::ProcessGroup(rank, size) {
  TORCH_CHECK(static_cast<int>(world_ranks.size()) == size,
              "tutti: the group's rank list has ", world_ranks.size(), " entries for ", size,
              " ranks");
  int world_size = 0, world_rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  TORCH_CHECK(world_ranks[static_cast<size_t>(rank)] == world_rank,
              "tutti: the process group's rank ", rank, " is MPI_COMM_WORLD rank ",
              world_ranks[static_cast<size_t>(rank)], ", but this process is rank ", world_rank,
              " (launch with mpirun or srun, one process per rank)");
  MPI_Group world_group = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  int rc = MPI_Group_incl(world_group, size, world_ranks.data(), &group);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_create_group(MPI_COMM_WORLD, group, 7714, &mpi_comm_);
  MPI_Group_free(&world_group);
  if (group != MPI_GROUP_NULL) MPI_Group_free(&group);
  TORCH_CHECK(rc == MPI_SUCCESS, "tutti: MPI_Comm_create_group failed (", rc, ")");
  if (timeout_s > 0 && !std::getenv("TUTTI_TIMEOUT"))
    setenv("TUTTI_TIMEOUT", std::to_string(timeout_s).c_str(), 0);
  // The worker waits beside the threads that compute the next gradients: a
  // long wait sleeps rather than keep yielding (README, TUTTI_SLEEP_AFTER).
  setenv("TUTTI_SLEEP_AFTER", std::to_string(TUTTI_SHARED_CORES_SLEEP_AFTER_US).c_str(), 0);
  const char* timeout = std::getenv("TUTTI_TIMEOUT");
  timeout_s_ = timeout ? std::strtod(timeout, nullptr) : TUTTI_DEFAULT_TIMEOUT_S;
  ok(tutti_comm_create(mpi_comm_, &comm_), "tutti_comm_create");
  worker_ = std::thread([this] { run_worker(); });
  std::lock_guard<std::mutex> lock(live_mutex);
  live_groups.push_back(this);
}

std::vector<ProcessGroupTutti*> ProcessGroupTutti::live() {
  std::lock_guard<std::mutex> lock(live_mutex);
  return live_groups;
}

ProcessGroupTutti::~ProcessGroupTutti() { shutdown(); }

void ProcessGroupTutti::shutdown() {
  {
    std::lock_guard<std::mutex> lock(live_mutex);
    std::erase(live_groups, this);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  queued_.notify_all();
  // Python destroys a group holding the GIL (torch.distributed dropping its
  // last reference, or finalize at exit). The worker may then drop the last
  // reference to a Work whose tensor Python made, and freeing that tensor
  // takes the GIL: joining with the GIL held would wait for ever. The
  // communicator's teardown waits for the other ranks, so it runs without
  // the GIL too.
  std::optional<pybind11::gil_scoped_release> without_gil;
  if (Py_IsInitialized() && PyGILState_Check()) without_gil.emplace();
  if (worker_.joinable()) worker_.join();
  tutti_comm_destroy(comm_);
  comm_ = nullptr;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && mpi_comm_ != MPI_COMM_NULL) MPI_Comm_free(&mpi_comm_);
}

void ProcessGroupTutti::run_worker() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    queued_.wait(lock, [&] { return !busy_ && (stopping_ || !queue_.empty() || !started_.empty()); });
    if (queue_.empty() && started_.empty()) return;  // stopping, all done
    busy_ = true;
    if (queue_.empty()) {
      // Started sends and receives progress here while nothing is queued.
      lock.unlock();
      test_started();
      std::this_thread::yield();
    } else {
      Queued item = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      run_one(item);
    }
    lock.lock();
    busy_ = false;
  }
}

void ProcessGroupTutti::run_one(Queued& item) {
  auto& [run, work] = item;
  std::exception_ptr error;
  tutti_request_t request = nullptr;
  try {
    request = run(comm_);
  } catch (...) {
    error = std::current_exception();
  }
  if (request) {
    const auto limit = timeout_s_ > 0 ? std::chrono::duration<double>(timeout_s_)
                                      : std::chrono::duration<double>(1e9);
    started_.push_back({request, work,
                        std::chrono::steady_clock::now() +
                            std::chrono::duration_cast<std::chrono::steady_clock::duration>(limit)});
  } else {
    work->done(error);
  }
}

void ProcessGroupTutti::run_until(const WorkTutti* work) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (busy_ || std::none_of(queue_.begin(), queue_.end(),
                            [&](const Queued& q) { return q.second.get() == work; }))
    return;  // the worker has it, or is at it: Work::wait waits for it
  busy_ = true;
  for (bool mine = false; !mine;) {
    Queued item = std::move(queue_.front());
    queue_.pop_front();
    mine = item.second.get() == work;
    lock.unlock();
    run_one(item);
    lock.lock();
  }
  busy_ = false;
  lock.unlock();
  queued_.notify_one();  // more may be queued, or started operations to test
}

void ProcessGroupTutti::test_started() {
  const auto now = std::chrono::steady_clock::now();
  for (size_t i = 0; i < started_.size();) {
    Started& op = started_[i];
    int done = 0;
    int status = tutti_test(&op.request, &done);
    std::string what = "send/recv";
    if (status == TUTTI_SUCCESS && !done) {
      if (now < op.deadline) {
        ++i;
        continue;
      }
      // Cancels and frees it with tutti's message naming the peer.
      status = tutti_wait_timeout(&op.request, 1e-3);
      what = "send/recv (outstanding for TUTTI_TIMEOUT=" + std::to_string(timeout_s_) + " s)";
    }
    std::exception_ptr error;
    try {
      ok(status, what.c_str());
    } catch (...) {
      error = std::current_exception();
    }
    op.work->done(error);
    started_.erase(started_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::enqueue(Run run,
                                                           std::vector<at::Tensor> outputs,
                                                           std::shared_ptr<int> source) {
  auto work = c10::make_intrusive<WorkTutti>(this, std::move(outputs), std::move(source));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TORCH_CHECK(!stopping_, "tutti: the process group was shut down (MPI is finalized)");
    queue_.emplace_back(std::move(run), work);
  }
  queued_.notify_one();
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::broadcast(
    std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) {
  at::Tensor t = single(tensors, "broadcast");
  const int root = static_cast<int>(opts.rootRank);
  return enqueue(blocking([t, root](tutti_comm_t c) {
    ok(tutti_bcast(t.data_ptr(), count(t), tutti_dtype(t), root, c), "broadcast");
  }), {t});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allreduce(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) {
  at::Tensor t = single(tensors, "all_reduce");
  const tutti_op_t op = tutti_op(opts.reduceOp);
  return enqueue(blocking([t, op](tutti_comm_t c) {
    ok(tutti_allreduce(TUTTI_IN_PLACE, t.data_ptr(), count(t), tutti_dtype(t), op, c),
       "all_reduce");
  }), {t});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "tutti: allreduce_coalesced of no tensors");
  for (const at::Tensor& t : tensors) check_same(tensors[0], t, "allreduce_coalesced");
  const tutti_op_t op = tutti_op(opts.reduceOp);
  // One group: tutti fuses the small tensors into one allreduce (one
  // call's latency for the bucket) and runs the large ones in place, with
  // no copies (TUTTI_GROUP_FUSE_BYTES).
  std::vector<at::Tensor> ts = tensors;
  return enqueue(blocking([ts, op](tutti_comm_t c) {
    ok(tutti_group_start(), "allreduce_coalesced");
    for (const at::Tensor& t : ts) {
      const int st = tutti_allreduce(TUTTI_IN_PLACE, t.data_ptr(), count(t), tutti_dtype(t), op, c);
      if (st != TUTTI_SUCCESS) {
        const std::string error = tutti_last_error();
        tutti_group_end();  // the group must close; what it recorded runs
        throw std::runtime_error(std::string("tutti allreduce_coalesced failed (") +
                                 tutti_strerror(st) + "): " + error);
      }
    }
    ok(tutti_group_end(), "allreduce_coalesced");
  }), tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::reduce(
    std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) {
  at::Tensor t = single(tensors, "reduce");
  const tutti_op_t op = tutti_op(opts.reduceOp);
  const int root = static_cast<int>(opts.rootRank);
  return enqueue(blocking([t, op, root](tutti_comm_t c) {
    int me = 0;
    tutti_comm_rank(c, &me);
    // Like MPI: the root reduces in place; the others' tensors stay as they were.
    ok(tutti_reduce(me == root ? TUTTI_IN_PLACE : t.data_ptr(), me == root ? t.data_ptr() : nullptr,
                    count(t), tutti_dtype(t), op, root, c),
       "reduce");
  }), {t});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  at::Tensor in = single(inputs, "all_gather");
  std::vector<at::Tensor> outs = rank_list(outputs, getSize(), in, "all_gather outputs");
  return enqueue(blocking([in, outs](tutti_comm_t c) {
    at::Tensor flat = at::empty({static_cast<int64_t>(outs.size()) * in.numel()}, in.options());
    ok(tutti_allgather(in.data_ptr(), flat.data_ptr(), count(in), tutti_dtype(in), c),
       "all_gather");
    unflatten(flat, outs);
  }), outs);
}

// Every rank's tensors, in one allgather: each rank's inputs flattened into
// one block, the blocks gathered, and block r split into outputs[r] (whose
// tensors match the inputs one by one, as on every rank).
c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  TORCH_CHECK(!inputs.empty(), "tutti: all_gather_coalesced of no tensors");
  for (const at::Tensor& t : inputs) check_same(inputs[0], t, "all_gather_coalesced input");
  TORCH_CHECK(static_cast<int>(outputs.size()) == getSize(),
              "tutti: all_gather_coalesced takes one output list per rank (", getSize(),
              "), got ", outputs.size());
  std::vector<at::Tensor> outs;
  for (const std::vector<at::Tensor>& list : outputs) {
    TORCH_CHECK(list.size() == inputs.size(), "tutti: each all_gather_coalesced output list ",
                "must hold ", inputs.size(), " tensors, like the input list");
    for (size_t i = 0; i < list.size(); ++i) {
      check_same(inputs[0], list[i], "all_gather_coalesced output");
      TORCH_CHECK(list[i].numel() == inputs[i].numel(), "tutti: all_gather_coalesced output ",
                  i, " must hold ", inputs[i].numel(), " elements, like input ", i);
      outs.push_back(list[i]);
    }
  }
  std::vector<at::Tensor> ins = inputs;
  std::vector<std::vector<at::Tensor>> lists = outputs;
  return enqueue(blocking([ins, lists](tutti_comm_t c) {
    const at::Tensor mine = flatten(ins);
    const int64_t block = mine.numel();
    at::Tensor flat = at::empty({static_cast<int64_t>(lists.size()) * block}, mine.options());
    ok(tutti_allgather(mine.data_ptr(), flat.data_ptr(), count(mine), tutti_dtype(mine), c),
       "all_gather_coalesced");
    for (size_t r = 0; r < lists.size(); ++r)
      unflatten(flat.narrow(0, static_cast<int64_t>(r) * block, block), lists[r]);
  }), outs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions&) {
  check_tensor(input, "all_gather_into_tensor input");
  check_same(input, output, "all_gather_into_tensor output");
  TORCH_CHECK(output.numel() == input.numel() * getSize(),
              "tutti: all_gather_into_tensor's output must hold size x input elements");
  at::Tensor in = input, out = output;
  return enqueue(blocking([in, out](tutti_comm_t c) {
    ok(tutti_allgather(in.data_ptr(), out.data_ptr(), count(in), tutti_dtype(in), c),
       "all_gather_into_tensor");
  }), {out});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  at::Tensor in = single(inputs, "gather");
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> outs;
  if (getRank() == root) {
    outs = rank_list(outputs, getSize(), in, "gather outputs (on the root)");
  } else {
    TORCH_CHECK(outputs.empty() || outputs[0].empty(),
                "tutti: gather takes output tensors on the root only");
  }
  return enqueue(blocking([in, outs, root](tutti_comm_t c) {
    at::Tensor flat;
    if (!outs.empty())
      flat = at::empty({static_cast<int64_t>(outs.size()) * in.numel()}, in.options());
    ok(tutti_gather(in.data_ptr(), outs.empty() ? nullptr : flat.data_ptr(), count(in),
                    tutti_dtype(in), root, c),
       "gather");
    if (!outs.empty()) unflatten(flat, outs);
  }), outs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  at::Tensor out = single(outputs, "scatter");
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> ins;
  if (getRank() == root) {
    ins = rank_list(inputs, getSize(), out, "scatter inputs (on the root)");
  } else {
    TORCH_CHECK(inputs.empty() || inputs[0].empty(),
                "tutti: scatter takes input tensors on the root only");
  }
  return enqueue(blocking([out, ins, root](tutti_comm_t c) {
    at::Tensor flat;
    if (!ins.empty()) flat = flatten(ins);
    ok(tutti_scatter(ins.empty() ? nullptr : flat.data_ptr(), out.data_ptr(), count(out),
                     tutti_dtype(out), root, c),
       "scatter");
  }), {out});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  at::Tensor out = single(outputs, "reduce_scatter");
  std::vector<at::Tensor> ins = rank_list(inputs, getSize(), out, "reduce_scatter inputs");
  const tutti_op_t op = tutti_op(opts.reduceOp);
  return enqueue(blocking([out, ins, op](tutti_comm_t c) {
    at::Tensor flat = flatten(ins);
    ok(tutti_reduce_scatter(flat.data_ptr(), out.data_ptr(), count(out), tutti_dtype(out), op, c),
       "reduce_scatter");
  }), {out});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  check_tensor(output, "reduce_scatter_tensor output");
  check_same(output, input, "reduce_scatter_tensor input");
  TORCH_CHECK(input.numel() == output.numel() * getSize(),
              "tutti: reduce_scatter_tensor's input must hold size x output elements");
  const tutti_op_t op = tutti_op(opts.reduceOp);
  at::Tensor in = input, out = output;
  return enqueue(blocking([in, out, op](tutti_comm_t c) {
    ok(tutti_reduce_scatter(in.data_ptr(), out.data_ptr(), count(out), tutti_dtype(out), op, c),
       "reduce_scatter_tensor");
  }), {out});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_split_sizes,
    std::vector<int64_t>& input_split_sizes, const c10d::AllToAllOptions&) {
  check_tensor(input, "all_to_all_single input");
  check_same(input, output, "all_to_all_single output");
  const int p = getSize();
  at::Tensor in = input, out = output;
  if (output_split_sizes.empty() && input_split_sizes.empty()) {
    TORCH_CHECK(in.numel() == out.numel() && in.numel() % p == 0,
                "tutti: all_to_all_single without split sizes needs equal input and output "
                "sizes divisible by the group size");
    return enqueue(blocking([in, out, p](tutti_comm_t c) {
      ok(tutti_alltoall(in.data_ptr(), out.data_ptr(), count(in) / static_cast<size_t>(p),
                        tutti_dtype(in), c),
         "all_to_all_single");
    }), {out});
  }
  // Split sizes count rows of the first dimension.
  auto counts = [p](const at::Tensor& t, const std::vector<int64_t>& splits, const char* what) {
    const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    const int64_t row = rows == 0 ? 0 : t.numel() / rows;
    std::vector<size_t> n(static_cast<size_t>(p)), displ(static_cast<size_t>(p));
    int64_t total = 0;
    for (int r = 0; r < p; ++r) {
      const int64_t s = splits.empty() ? rows / p : splits[static_cast<size_t>(r)];
      TORCH_CHECK(s >= 0, "tutti: negative split size in ", what);
      n[static_cast<size_t>(r)] = static_cast<size_t>(s * row);
      displ[static_cast<size_t>(r)] = static_cast<size_t>(total * row);
      total += s;
    }
    TORCH_CHECK(total == rows && (splits.empty() ? rows % p == 0 : splits.size() == size_t(p)),
                "tutti: ", what, " split sizes do not add up to the tensor's first dimension");
    return std::make_pair(n, displ);
  };
  auto [scounts, sdispls] = counts(in, input_split_sizes, "input");
  auto [rcounts, rdispls] = counts(out, output_split_sizes, "output");
  return enqueue(blocking([in, out, scounts = scounts, sdispls = sdispls, rcounts = rcounts,
                  rdispls = rdispls](tutti_comm_t c) {
    ok(tutti_alltoallv(in.data_ptr(), scounts.data(), sdispls.data(), out.data_ptr(),
                       rcounts.data(), rdispls.data(), tutti_dtype(in), c),
       "all_to_all_single");
  }), {out});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::alltoall(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllToAllOptions&) {
  const int p = getSize();
  TORCH_CHECK(static_cast<int>(inputs.size()) == p && static_cast<int>(outputs.size()) == p,
              "tutti: all_to_all needs ", p, " input and ", p, " output tensors");
  std::vector<size_t> scounts(p), sdispls(p), rcounts(p), rdispls(p);
  size_t s_total = 0, r_total = 0;
  for (int r = 0; r < p; ++r) {
    check_same(inputs[0], inputs[r], "all_to_all input");
    check_same(inputs[0], outputs[r], "all_to_all output");
    scounts[r] = count(inputs[r]);
    sdispls[r] = s_total;
    s_total += scounts[r];
    rcounts[r] = count(outputs[r]);
    rdispls[r] = r_total;
    r_total += rcounts[r];
  }
  std::vector<at::Tensor> ins = inputs, outs = outputs;
  return enqueue(blocking([=](tutti_comm_t c) {
    at::Tensor flat_in = flatten(ins);
    at::Tensor flat_out = at::empty({static_cast<int64_t>(r_total)}, ins[0].options());
    ok(tutti_alltoallv(flat_in.data_ptr(), scounts.data(), sdispls.data(), flat_out.data_ptr(),
                       rcounts.data(), rdispls.data(), tutti_dtype(flat_in), c),
       "all_to_all");
    unflatten(flat_out, outs);  // rdispls are the running sums of rcounts
  }), outs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::send(std::vector<at::Tensor>& tensors,
                                                        int dst_rank, int tag) {
  at::Tensor t = single(tensors, "send");
  return enqueue([t, dst_rank, tag](tutti_comm_t c) {
    tutti_request_t request = nullptr;
    ok(tutti_isend(t.data_ptr(), count(t), tutti_dtype(t), dst_rank, tag, c, &request), "send");
    return request;
  }, {t});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::recv(std::vector<at::Tensor>& tensors,
                                                        int src_rank, int tag) {
  at::Tensor t = single(tensors, "recv");
  return enqueue([t, src_rank, tag](tutti_comm_t c) {
    tutti_request_t request = nullptr;
    ok(tutti_irecv(t.data_ptr(), count(t), tutti_dtype(t), src_rank, tag, c, &request), "recv");
    return request;
  }, {t});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::recvAnysource(std::vector<at::Tensor>& tensors,
                                                                 int tag) {
  at::Tensor t = single(tensors, "recv");
  auto source = std::make_shared<int>(-1);
  return enqueue([t, tag, source](tutti_comm_t c) {
    tutti_request_t request = nullptr;
    ok(tutti_irecv_from(t.data_ptr(), count(t), tutti_dtype(t), TUTTI_ANY_SOURCE, tag, c,
                        source.get(), &request),
       "recv");
    return request;
  }, {t}, source);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::barrier(
    const c10d::BarrierOptions&) {
  return enqueue(blocking([](tutti_comm_t c) { ok(tutti_barrier(c), "barrier"); }), {});
}

}  // namespace tutti_torch
