#include "transport/ucx.hpp"

#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "base/log.hpp"
#include "host/memory.hpp"
#include "transport/message_log.hpp"
#include "transport/mpi_types.hpp"

namespace tutti {
namespace {

// The source rank sits above tutti's 41 tag bits, so a receive from one peer
// never matches a message from another; the top bit marks acknowledgements.
constexpr int kSourceShift = 41;
constexpr int kSourceBits = 22;
constexpr ucp_tag_t kAckFlag = ucp_tag_t{1} << 63;
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};
constexpr ucp_tag_t kSourceMask = ((ucp_tag_t{1} << kSourceBits) - 1) << kSourceShift;
// User point-to-point messages: whether the sender waits for an
// acknowledgement travels in the message's tag (a bit the 32-bit user tag
// leaves free), because the receiver cannot always tell: a receive from any
// source does not know the sender, and a receive of the wrong size would
// otherwise disagree with its sender and leave it waiting.
constexpr ucp_tag_t kUserAckRequest = ucp_tag_t{1} << 39;
static_assert(kUserAckRequest < kTagUserFlag, "the flag must sit inside tutti's tag bits");
static_assert(kUserAckRequest != kTagControlFlag, "control messages carry a bit of their own");

// Every message tells UCX the memory type tutti already knows, so UCX does
// not look it up itself: its lookup can misclassify device buffers allocated
// before ucp_init, from cudaMallocAsync pools or through cuMemMap. Device
// memory is CUDA or CUDA_MANAGED by the driver's answer (one query per
// device message; tutti's MemoryType::Cuda covers both).
ucs_memory_type_t ucx_memory_type(const void* buf, MemoryType mem) {
  if (mem == MemoryType::Host) return UCS_MEMORY_TYPE_HOST;
  return buffer_device_of(buf).buffer >= 0 ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_CUDA_MANAGED;
}

// The request parameters of a message: completion by callback with
// `user_data`, the memory type given (acknowledgements: host), plus `flags`.
ucp_request_param_t message_param(void* user_data, ucs_memory_type_t type, uint32_t flags = 0) {
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                       UCP_OP_ATTR_FIELD_MEMORY_TYPE | flags;
  param.user_data = user_data;
  param.memory_type = type;
  return param;
}

int source_of(ucp_tag_t sender_tag) {
  return static_cast<int>((sender_tag & kSourceMask) >> kSourceShift);
}

void check_ucs(ucs_status_t s, const char* what) {
  if (s != UCS_OK) fail(TUTTI_ERR_TRANSPORT, what, " failed: ", ucs_status_string(s));
}

Status map_status(ucs_status_t s) {
  switch (s) {
    case UCS_OK: return TUTTI_SUCCESS;
    case UCS_ERR_MESSAGE_TRUNCATED: return TUTTI_ERR_MISMATCH;
    case UCS_ERR_NO_MEMORY: return TUTTI_ERR_OUT_OF_MEMORY;
    default: return TUTTI_ERR_TRANSPORT;
  }
}

void complete(Completion* c, ucs_status_t status, size_t bytes, int source = -1) {
  if (message_log::enabled())
    message_log::write("DONE c=%p status=%s bytes=%zu source=%d", static_cast<void*>(c),
                       ucs_status_string(status), bytes, source);
  c->status = map_status(status);
  if (status != UCS_OK) c->error = str("UCX: ", ucs_status_string(status));
  c->bytes = bytes;
  c->source = source;
  c->handle = nullptr;
  c->done = true;
}

void on_send_done(void* request, ucs_status_t status, void* user_data) {
  complete(static_cast<Completion*>(user_data), status, 0);
  ucp_request_free(request);
}

void on_recv_done(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                  void* user_data) {
  complete(static_cast<Completion*>(user_data), status, info ? info->length : 0,
           info ? source_of(info->sender_tag) : -1);
  ucp_request_free(request);
}

void on_endpoint_error(void* arg, ucp_ep_h, ucs_status_t) {
  // Pending requests on the endpoint complete with the error themselves;
  // remember it so later sends fail fast.
  *static_cast<bool*>(arg) = true;
}

// FNV-1a of this machine's boot id; 0 if it cannot be read.
uint64_t boot_id_hash() {
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!(f >> id) || id.empty()) return 0;
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : id) h = (h ^ ch) * 1099511628211ull;
  return h == 0 ? 1 : h;
}

// Sets one of UCX's options; on failure releases the configuration and
// throws.
void modify_config(ucp_config_t* config, const char* name, const char* value) {
  const ucs_status_t s = ucp_config_modify(config, name, value);
  if (s == UCS_OK) return;
  ucp_config_release(config);
  check_ucs(s, str("ucp_config_modify(", name, ")").c_str());
}

// The inode of this process's network namespace; 0 if it cannot be read.
uint64_t network_namespace() {
  struct stat st {};
  if (stat("/proc/self/ns/net", &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_ino);
}

// What a rank tells the others before UCX starts.
struct MachineId {
  uint64_t boot = 0;     // boot_id_hash()
  uint64_t network = 0;  // network_namespace()
};

}  // namespace

std::string UcxTransport::version() {
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  return str(major, ".", minor, ".", release);
}

UcxTransport::UcxTransport(MPI_Comm comm, bool peer_errors, double timeout_s)
    : comm_(comm), peer_errors_(peer_errors), timeout_s_(timeout_s) {
  check_mpi(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &nranks_), "MPI_Comm_size");
  if (nranks_ > (1 << kSourceBits))
    fail(TUTTI_ERR_UNSUPPORTED, "the UCX transport supports up to ", 1 << kSourceBits, " ranks");

  // Which ranks share this machine as UCX sees it: by boot id, not by
  // hostname (containers on one host have their own hostnames and still
  // share memory). An unreadable boot id counts as the same machine: the
  // acknowledgements are then kept, which is always safe. Known before
  // ucp_init, because the rendezvous threshold depends on it.
  const MachineId me{boot_id_hash(), network_namespace()};
  std::vector<MachineId> ids(static_cast<size_t>(nranks_));
  check_mpi(MPI_Allgather(&me, 2, MPI_UINT64_T, ids.data(), 2, MPI_UINT64_T, comm),
            "MPI_Allgather of boot ids");
  same_machine_.resize(static_cast<size_t>(nranks_));
  bool spans_machines = false;
  bool spans_networks_on_machine = false;
  for (int r = 0; r < nranks_; ++r) {
    const MachineId& peer = ids[static_cast<size_t>(r)];
    same_machine_[r] = me.boot == 0 || peer.boot == 0 || peer.boot == me.boot;
    spans_machines = spans_machines || !same_machine_[r];
    spans_networks_on_machine =
        spans_networks_on_machine || (same_machine_[r] && peer.network != me.network);
  }

  ucp_config_t* config = nullptr;
  check_ucs(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
  // UCX's rendezvous threshold is set by tutti unless the user set
  // UCX_RNDV_THRESH (then the acknowledgements follow the user's value).
  // Every message UCX may send by rendezvous within a machine must be
  // acknowledged (see UcxTransport::kAckBytes), and acknowledgements start
  // at kAckBytes at the latest, so any threshold is safe. Within one
  // machine it is kAckBytes. In a job across machines it is
  // kInterMachineRndvBytes: over TCP UCX's rendezvous costs extra round
  // trips (32 KiB: 63 us against 14 us eager; allreduce of 512 KiB on 2
  // emulated nodes: 258 us eager against 628 us), and the algorithms' 256
  // KiB pipeline chunks then all go eager.
  if (const char* user = std::getenv("UCX_RNDV_THRESH")) {
    ack_bytes_ = ack_bytes_for(user);
  } else {
    const size_t thresh_bytes = spans_machines ? kInterMachineRndvBytes : kAckBytes;
    modify_config(config, "RNDV_THRESH", std::to_string(thresh_bytes).c_str());
  }
  // Containers on one machine with network namespaces of their own (the
  // cluster suite's container mode; docker without --network host): UCX
  // joins them by shared memory, but with adaptive progress a worker polls
  // its shared-memory interface only once one of its own endpoints uses it
  // or a peer wakes it through an abstract unix socket, which belongs to the
  // sender's network namespace and so never arrives. A rank that only
  // receives from such a peer (a bcast's leaf) then never sees the message.
  // Polling every interface from the start avoids that.
  if (spans_networks_on_machine && !std::getenv("UCX_ADAPTIVE_PROGRESS"))
    modify_config(config, "ADAPTIVE_PROGRESS", "n");
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
  // Across machines a progress thread keeps this worker answering while the
  // user is outside tutti (see UcxTransport::run_progress_thread); it sleeps
  // on the worker's event file descriptor.
  const char* thread_env = std::getenv("TUTTI_UCX_PROGRESS_THREAD");
  threaded_ = spans_machines && !(thread_env && std::string(thread_env) == "0");
  params.features = UCP_FEATURE_TAG | (threaded_ ? UCP_FEATURE_WAKEUP : 0);
  params.estimated_num_eps = static_cast<size_t>(nranks_);
  const ucs_status_t init = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  check_ucs(init, "ucp_init");

  ucp_context_attr_t ctx_attr{};
  ctx_attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  if (const ucs_status_t q = ucp_context_query(context_, &ctx_attr); q == UCS_OK)
    memory_types_ = ctx_attr.memory_types;
  else  // host memory only, as far as tutti knows: device buffers are staged
    log_line(rank_, str("UCX: ucp_context_query failed (", ucs_status_string(q),
                        "); device buffers go through host memory"));

  ucp_worker_params_t wparams{};
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  // Serialized, not single (UCX's single is MPI's funneled: one thread
  // ever): the threads that call tutti on this communicator take turns (one
  // at a time, and a wait on another communicator may progress this one:
  // api/progress_elsewhere.hpp), as do the user's thread and the progress
  // thread (mutex_). Some transports flush the CPU's stores before another
  // thread may progress the worker only where it is not single.
  wparams.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  check_ucs(ucp_worker_create(context_, &wparams, &worker_), "ucp_worker_create");

  ucp_address_t* address = nullptr;
  size_t length = 0;
  check_ucs(ucp_worker_get_address(worker_, &address, &length), "ucp_worker_get_address");
  // One O(P) exchange of all worker addresses, after one of their lengths.
  const int my_length = static_cast<int>(length);
  std::vector<int> lengths(static_cast<size_t>(nranks_)), displs(static_cast<size_t>(nranks_));
  const int lengths_rc = MPI_Allgather(&my_length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm);
  if (lengths_rc != MPI_SUCCESS) ucp_worker_release_address(worker_, address);
  check_mpi(lengths_rc, "MPI_Allgather of UCX address lengths");
  size_t total = 0;
  address_offsets_.resize(static_cast<size_t>(nranks_) + 1);
  for (int r = 0; r < nranks_; ++r) {
    displs[r] = static_cast<int>(total);
    address_offsets_[r] = total;
    total += static_cast<size_t>(lengths[r]);
  }
  address_offsets_[nranks_] = total;
  addresses_.resize(total);
  const int rc = MPI_Allgatherv(address, my_length, MPI_BYTE, addresses_.data(), lengths.data(),
                                displs.data(), MPI_BYTE, comm);
  ucp_worker_release_address(worker_, address);
  check_mpi(rc, "MPI_Allgatherv of UCX addresses");
  check_mpi(MPI_Comm_dup(comm, &teardown_comm_), "MPI_Comm_dup (UCX teardown)");
  endpoints_.assign(static_cast<size_t>(nranks_), nullptr);
  if (threaded_) start_progress_thread();
}

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void UcxTransport::start_progress_thread() {
  check_ucs(ucp_worker_get_efd(worker_, &worker_fd_), "ucp_worker_get_efd");
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) fail(TUTTI_ERR_TRANSPORT, "eventfd for the UCX progress thread failed");
  last_user_poll_ns_ = now_ns();
  progress_thread_ = std::thread([this] { run_progress_thread(); });
}

void UcxTransport::stop_progress_thread() {
  if (!progress_thread_.joinable()) return;
  stop_ = true;
  const uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof one) < 0) {
    // The eventfd cannot be full: the thread ends within its poll timeout.
  }
  progress_thread_.join();
  close(wake_fd_);
  wake_fd_ = -1;
}

void UcxTransport::nap(int64_t ns) {
  // On the eventfd, so that stop_progress_thread need not wait it out.
  pollfd wake{wake_fd_, POLLIN, 0};
  const timespec span{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  if (ppoll(&wake, 1, &span, nullptr) > 0) {
    // Woken by stop_progress_thread: the caller's loop sees stop_.
  }
}

void UcxTransport::run_progress_thread() {
  while (!stop_.load()) {
    // While the user's thread polls, it progresses; stay out of its way.
    // Inside a wait that polls at every turn (user_polls), in long sleeps:
    // waking every millisecond there cost ranks that share cores a fifth
    // to a third of a 512 KiB-2 MiB alltoall on 2 x 2 emulated nodes
    // (docs/perf/ucx-thread-sleep-2026-11-29.txt). A peer that needs this
    // rank's progress once the wait has ended waits at most that long more.
    if (user_polling_.load(std::memory_order_relaxed) > 0) {
      nap(kUserWaitSleepNs);
      continue;
    }
    const int64_t idle_ns = now_ns() - last_user_poll_ns_.load(std::memory_order_relaxed);
    if (idle_ns < kUserPollingNs) {
      nap(kUserPollingNs - idle_ns);
      continue;
    }
    ucs_status_t armed = UCS_OK;
    {
      std::lock_guard<std::mutex> guard(mutex_);
      for (int rounds = 0; rounds < 1000 && progress_locked() > 0; ++rounds) {
      }
      armed = ucp_worker_arm(worker_);
    }
    if (armed == UCS_ERR_BUSY) continue;  // more events came in meanwhile
    // Unarmed (an error): poll at the timeout's pace instead of sleeping on
    // events.
    pollfd fds[2] = {{armed == UCS_OK ? worker_fd_ : -1, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (poll(fds, 2, kThreadPollMs) > 0 && (fds[1].revents & POLLIN)) {
      uint64_t count = 0;
      if (read(wake_fd_, &count, sizeof count) < 0) {
        // Nothing to read: another wake-up took it.
      }
    }
  }
}

UcxTransport::~UcxTransport() {
  stop_progress_thread();
  using Clock = std::chrono::steady_clock;
  const double limit_s = timeout_s_ > 0 ? timeout_s_ : 1e9;
  const auto deadline = Clock::now() + std::chrono::duration<double>(limit_s);
  // All communication is finished on every rank once everyone got here, so
  // endpoints can be closed without a flush that would need the peer. The
  // barrier is non-blocking and this worker keeps progressing meanwhile: a
  // peer may still need a message that only it can send.
  MPI_Request barrier = MPI_REQUEST_NULL;
  bool everyone_here = teardown_comm_ != MPI_COMM_NULL &&
                       MPI_Ibarrier(teardown_comm_, &barrier) == MPI_SUCCESS;
  for (int done = 0; everyone_here && !done;) {
    if (MPI_Test(&barrier, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) everyone_here = false;
    if (!done && ucp_worker_progress(worker_) == 0) sched_yield();
    if (!done && Clock::now() > deadline) everyone_here = false;
  }
  if (everyone_here) {
    MPI_Comm_free(&teardown_comm_);
  } else {
    // The barrier (if posted) stays in flight, and with it its communicator:
    // both are left to MPI, which completes the barrier if the late ranks
    // ever arrive. (Open MPI refuses MPI_Request_free on an active
    // collective's request, fatally: the handle is dropped instead.)
    log_line(rank_, "UCX transport: not every rank reached its teardown within TUTTI_TIMEOUT; "
                    "closing the endpoints regardless");
  }
  for (ucp_ep_h& ep : endpoints_) {
    if (!ep) continue;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;
    void* req = ucp_ep_close_nbx(ep, &param);
    if (UCS_PTR_IS_PTR(req)) {
      while (ucp_request_check_status(req) == UCS_INPROGRESS && Clock::now() < deadline)
        ucp_worker_progress(worker_);
      ucp_request_free(req);
    }
    ep = nullptr;
  }
  if (worker_) ucp_worker_destroy(worker_);
  if (context_) ucp_cleanup(context_);
}

void UcxTransport::log_message(const char* what, int peer, Tag tag, size_t bytes, bool acked,
                               const Completion* c) const {
  message_log::write("%s worker=%p c=%p rank=%d peer=%d tag=%s bytes=%zu acked=%d", what,
                     static_cast<void*>(worker_), static_cast<const void*>(c), rank_, peer,
                     describe_tag(tag).c_str(), bytes, acked ? 1 : 0);
}

ucp_ep_h UcxTransport::endpoint(int peer) {
  ucp_ep_h& ep = endpoints_[peer];
  if (ep) return ep;
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  if (peer_errors_) params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(addresses_.data() + address_offsets_[peer]);
  // Peer failure detection makes UCX 1.13 drop its shared-memory transports
  // (they cannot report a dead peer) and run everything over TCP, 3-7x
  // slower within a node; so it is opt-in. Without it a dead peer shows up
  // as a timeout.
  params.err_mode = peer_errors_ ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
  params.err_handler.cb = on_endpoint_error;
  params.err_handler.arg = &failed_peer_;
  const ucs_status_t s = ucp_ep_create(worker_, &params, &ep);
  if (s != UCS_OK) {
    ep = nullptr;
    set_last_error(TUTTI_ERR_TRANSPORT,
                   str("UCX: cannot connect to rank ", peer, ": ", ucs_status_string(s)));
  }
  return ep;
}

// A message that is acknowledged (see kAckBytes): done once its own UCX
// request and the acknowledgement (received, for a send; sent, for a
// receive) are.
struct UcxTransport::AckedOp {
  UcxTransport* transport = nullptr;
  Completion* user = nullptr;
  int peer = 0;
  ucp_tag_t ack_tag = 0;          // the acknowledgement's full UCX tag
  void* message_request = nullptr;  // while the message runs
  void* ack_request = nullptr;      // a send's acknowledgement receive, while it runs
  int running = 0;                // UCX requests of this operation still running
  bool ack_due = false;           // a receive's message is in; its ack is not yet posted
  bool cancelled = false;
  bool finished = false;
  ucs_status_t status = UCS_OK;   // the first failure
  size_t bytes = 0;
  int source = -1;                // a receive: the sender, once matched
  bool device = false;            // a receive into device memory (acked at any size)
};

namespace {

char ack_byte = 0;  // acknowledgements carry no data; UCX wants a buffer anyway

void note(UcxTransport::AckedOp* op, ucs_status_t status) {
  if (status != UCS_OK && op->status == UCS_OK) op->status = status;
}

// The common end of every request of an acknowledged operation: keep the
// first error, count the request as done, let the operation finish if it
// was the last, and give the request back to UCX.
void end_part(UcxTransport::AckedOp* op, void* request, ucs_status_t status) {
  note(op, status);
  --op->running;
  op->transport->settle(op);
  ucp_request_free(request);
}

void on_acked_send_done(void* request, ucs_status_t status, void* user_data) {
  auto* op = static_cast<UcxTransport::AckedOp*>(user_data);
  op->message_request = nullptr;
  end_part(op, request, status);
}

void on_ack_received(void* request, ucs_status_t status, const ucp_tag_recv_info_t*,
                     void* user_data) {
  auto* op = static_cast<UcxTransport::AckedOp*>(user_data);
  op->ack_request = nullptr;
  end_part(op, request, status);
}

void on_acked_recv_done(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                        void* user_data) {
  auto* op = static_cast<UcxTransport::AckedOp*>(user_data);
  op->message_request = nullptr;
  op->bytes = info ? info->length : 0;
  if (info) op->source = source_of(info->sender_tag);
  // A truncated message was still delivered: its sender waits for the ack.
  // A shorter one (a CUDA IPC offer for a large receive) is acknowledged
  // only if its sender waits, which it decided by its own size.
  if ((status == UCS_OK || status == UCS_ERR_MESSAGE_TRUNCATED) && !op->cancelled &&
      (op->device || status == UCS_ERR_MESSAGE_TRUNCATED || op->transport->acks(op->bytes)))
    op->transport->ack_later(op);
  end_part(op, request, status);
}

// A user receive: the ack goes to whichever rank sent the message, if that
// sender asked for one (kUserAckRequest).
void on_user_recv_done(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                       void* user_data) {
  auto* op = static_cast<UcxTransport::AckedOp*>(user_data);
  op->message_request = nullptr;
  op->bytes = info ? info->length : 0;
  const bool delivered = info && (status == UCS_OK || status == UCS_ERR_MESSAGE_TRUNCATED);
  if (delivered) {
    op->source = source_of(info->sender_tag);
    op->peer = op->source;
    if ((info->sender_tag & kUserAckRequest) && !op->cancelled) op->transport->ack_later(op);
  }
  end_part(op, request, status);
}

void on_ack_sent(void* request, ucs_status_t status, void* user_data) {
  auto* op = static_cast<UcxTransport::AckedOp*>(user_data);
  end_part(op, request, status);
}

}  // namespace

size_t UcxTransport::ack_bytes_for(const char* rndv_thresh) {
  const std::string v(rndv_thresh);
  if (v == "inf") return kAckBytes;
  char* end = nullptr;
  const double number = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || number < 0) return 1;
  std::string unit(end);
  for (char& ch : unit) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "k" || unit == "kb") scale = 1024.0;
  else if (unit == "m" || unit == "mb") scale = 1024.0 * 1024;
  else if (unit == "g" || unit == "gb") scale = 1024.0 * 1024 * 1024;
  if (scale == 0) return 1;
  const double bytes = number * scale;
  if (bytes >= static_cast<double>(kAckBytes)) return kAckBytes;
  return std::max<size_t>(1, static_cast<size_t>(bytes));
}

bool UcxTransport::needs_ack(int peer, size_t bytes, MemoryType mem) const {
  // UCX picks its own protocols for device memory: acknowledge them all.
  if (mem != MemoryType::Host) return true;
  return bytes >= ack_bytes_ && same_machine_[static_cast<size_t>(peer)];
}

void UcxTransport::ack_later(AckedOp* op) {
  op->ack_due = true;
  acks_due_.push_back(op);
}

void UcxTransport::settle(AckedOp* op) {
  if (op->finished || op->running > 0 || op->ack_due) return;
  op->finished = true;
  ++finished_ops_;
  if (op->user) {
    complete(op->user, op->status, op->bytes, op->source);
    op->user = nullptr;
  }
}

UcxTransport::AckedOp* UcxTransport::new_acked_op(int peer, ucp_tag_t ack_tag, Completion* c) {
  std::unique_ptr<AckedOp> op;
  if (spare_acked_.empty()) {
    op = std::make_unique<AckedOp>();
  } else {
    op = std::move(spare_acked_.back());
    spare_acked_.pop_back();
    *op = AckedOp{};
  }
  op->transport = this;
  op->user = c;
  op->peer = peer;
  op->ack_tag = ack_tag;
  acked_.push_back(std::move(op));
  return acked_.back().get();
}

Status UcxTransport::send(int peer, Tag tag, const void* buf, size_t bytes, MemoryType mem,
                          Completion* c) {
  const std::unique_lock<std::mutex> guard = hold();
  if (peer < 0 || peer >= nranks_)
    return set_last_error(TUTTI_ERR_INVALID_ARGUMENT, str("no rank ", peer));
  ucp_ep_h ep = endpoint(peer);
  if (!ep) return TUTTI_ERR_TRANSPORT;
  const bool acked = needs_ack(peer, bytes, mem);
  if (message_log::enabled()) log_message("SEND", peer, tag, bytes, acked, c);
  const ucp_tag_t ucx_tag = tag | (static_cast<ucp_tag_t>(rank_) << kSourceShift) |
                            (acked && is_user_tag(tag) ? kUserAckRequest : 0);
  ucp_request_param_t param = message_param(c, ucx_memory_type(buf, mem));
  if (!acked) {
    param.cb.send = on_send_done;
    void* req = ucp_tag_send_nbx(ep, buf, bytes, ucx_tag, &param);
    if (req == nullptr) {
      complete(c, UCS_OK, bytes);
    } else if (UCS_PTR_IS_ERR(req)) {
      return set_last_error(map_status(UCS_PTR_STATUS(req)), str("UCX send to rank ", peer, ": ",
                                                                 ucs_status_string(UCS_PTR_STATUS(req))));
    } else if (!c->done) {
      c->handle = req;
    }
    return TUTTI_SUCCESS;
  }

  // The acknowledgement's receive goes first: it may arrive soon after.
  AckedOp* op = new_acked_op(peer, tag | kAckFlag | (static_cast<ucp_tag_t>(peer) << kSourceShift), c);
  ucp_request_param_t ack_param =
      message_param(op, UCS_MEMORY_TYPE_HOST, UCP_OP_ATTR_FLAG_NO_IMM_CMPL);
  ack_param.cb.recv = on_ack_received;
  void* ack = ucp_tag_recv_nbx(worker_, &ack_byte, 0, op->ack_tag, kFullMask, &ack_param);
  if (UCS_PTR_IS_ERR(ack)) {
    op->user = nullptr;
    settle(op);
    return set_last_error(map_status(UCS_PTR_STATUS(ack)),
                          str("UCX receive of an acknowledgement from rank ", peer, ": ",
                              ucs_status_string(UCS_PTR_STATUS(ack))));
  }
  op->ack_request = ack;
  ++op->running;
  param.cb.send = on_acked_send_done;
  param.user_data = op;
  void* req = ucp_tag_send_nbx(ep, buf, bytes, ucx_tag, &param);
  if (UCS_PTR_IS_ERR(req)) {
    // Nothing was sent: withdraw the acknowledgement's receive.
    op->user = nullptr;
    op->cancelled = true;
    ucp_request_cancel(worker_, op->ack_request);
    return set_last_error(map_status(UCS_PTR_STATUS(req)), str("UCX send to rank ", peer, ": ",
                                                               ucs_status_string(UCS_PTR_STATUS(req))));
  }
  if (req != nullptr) {
    op->message_request = req;
    ++op->running;
  }
  op->bytes = bytes;
  if (!c->done) c->handle = op;
  return TUTTI_SUCCESS;
}

Status UcxTransport::recv(int peer, Tag tag, void* buf, size_t bytes, MemoryType mem,
                          Completion* c) {
  const std::unique_lock<std::mutex> guard = hold();
  const bool any_source = peer == kAnySource && is_user_tag(tag);
  if (!any_source && (peer < 0 || peer >= nranks_))
    return set_last_error(TUTTI_ERR_INVALID_ARGUMENT, str("no rank ", peer));
  if (message_log::enabled())
    log_message("RECV", peer, tag, bytes, !is_user_tag(tag) && needs_ack(peer, bytes, mem), c);
  // Completion always comes through the callback, which reports the length
  // of the message that matched (an immediate completion may not).
  ucp_request_param_t param =
      message_param(c, ucx_memory_type(buf, mem), UCP_OP_ATTR_FLAG_NO_IMM_CMPL);
  const ucp_tag_t ucx_tag =
      tag | (static_cast<ucp_tag_t>(any_source ? 0 : peer) << kSourceShift);
  ucp_tag_t mask = kFullMask;
  AckedOp* op = nullptr;
  if (is_user_tag(tag)) {
    // The sender says in the tag whether it waits for an ack; match either.
    mask &= ~kUserAckRequest;
    if (any_source) mask &= ~kSourceMask;
    op = new_acked_op(peer, tag | kAckFlag | (static_cast<ucp_tag_t>(rank_) << kSourceShift), c);
    param.cb.recv = on_user_recv_done;
    param.user_data = op;
  } else if (needs_ack(peer, bytes, mem)) {
    op = new_acked_op(peer, tag | kAckFlag | (static_cast<ucp_tag_t>(rank_) << kSourceShift), c);
    op->device = mem != MemoryType::Host;
    param.cb.recv = on_acked_recv_done;
    param.user_data = op;
  } else {
    param.cb.recv = on_recv_done;
    param.user_data = c;
  }
  void* req = ucp_tag_recv_nbx(worker_, buf, bytes, ucx_tag, mask, &param);
  if (UCS_PTR_IS_ERR(req)) {
    if (op) {
      op->user = nullptr;
      settle(op);
    }
    const ucs_status_t s = UCS_PTR_STATUS(req);
    return set_last_error(map_status(s), str("UCX receive from ",
                                             any_source ? "any rank" : str("rank ", peer), ": ",
                                             ucs_status_string(s)));
  }
  if (op) {
    op->message_request = req;
    ++op->running;
    c->handle = op;
  } else if (!c->done) {
    c->handle = req;
  }
  return TUTTI_SUCCESS;
}

void UcxTransport::post_due_acks() {
  std::vector<AckedOp*> due;
  due.swap(acks_due_);
  for (AckedOp* op : due) {
    if (!op->ack_due) continue;  // cancelled meanwhile
    op->ack_due = false;
    ucp_ep_h ep = endpoint(op->peer);
    if (!ep) {
      note(op, UCS_ERR_UNREACHABLE);
    } else {
      ucp_request_param_t param = message_param(op, UCS_MEMORY_TYPE_HOST);
      param.cb.send = on_ack_sent;
      if (message_log::enabled())
        message_log::write("ACK worker=%p c=%p rank=%d peer=%d", static_cast<void*>(worker_),
                           static_cast<void*>(op->user), rank_, op->peer);
      void* req = ucp_tag_send_nbx(ep, &ack_byte, 0, op->ack_tag, &param);
      if (UCS_PTR_IS_ERR(req)) note(op, UCS_PTR_STATUS(req));
      else if (req != nullptr) ++op->running;
    }
    settle(op);
  }
}

void UcxTransport::user_polls(bool starts) {
  if (starts) user_polling_.fetch_add(1, std::memory_order_relaxed);
  else user_polling_.fetch_sub(1, std::memory_order_relaxed);
}

int UcxTransport::progress() {
  if (!threaded_) return progress_locked();
  last_user_poll_ns_.store(now_ns(), std::memory_order_relaxed);
  const std::lock_guard<std::mutex> guard(mutex_);
  return progress_locked();
}

int UcxTransport::progress_locked() {
  int events = static_cast<int>(ucp_worker_progress(worker_));
  if (!acks_due_.empty()) {
    events += static_cast<int>(acks_due_.size());
    post_due_acks();
  }
  if (finished_ops_ > 0) {
    const auto done = std::partition(acked_.begin(), acked_.end(),
                                     [](const std::unique_ptr<AckedOp>& op) {
                                       return !(op->finished && op->running == 0);
                                     });
    for (auto it = done; it != acked_.end() && spare_acked_.size() < kSpareAckedOps; ++it)
      spare_acked_.push_back(std::move(*it));
    acked_.erase(done, acked_.end());
    finished_ops_ = 0;
  }
  return events;
}

void UcxTransport::cancel(Completion* c) {
  const std::unique_lock<std::mutex> guard = hold();
  if (message_log::enabled())
    message_log::write("CANCEL worker=%p c=%p", static_cast<void*>(worker_), static_cast<void*>(c));
  if (c->done || !c->handle) return;
  for (const std::unique_ptr<AckedOp>& op : acked_) {
    if (op.get() != c->handle) continue;
    // Its requests complete through their callbacks (a send cannot be
    // cancelled; it completes or fails on its own); no ack is sent any more.
    op->cancelled = true;
    op->ack_due = false;
    if (op->message_request) ucp_request_cancel(worker_, op->message_request);
    if (op->ack_request) ucp_request_cancel(worker_, op->ack_request);
    if (op->status == UCS_OK) op->status = UCS_ERR_CANCELED;
    settle(op.get());
    return;
  }
  // The callback (with UCS_ERR_CANCELED) marks the completion done.
  ucp_request_cancel(worker_, c->handle);
}

std::string UcxTransport::unmatched_from(int peer) {
  if (peer < 0 || peer >= nranks_) return {};
  const std::unique_lock<std::mutex> guard = hold();
  // The first message from `peer` in UCX's unexpected queue, left there.
  ucp_tag_recv_info_t info{};
  const ucp_tag_message_h message = ucp_tag_probe_nb(
      worker_, static_cast<ucp_tag_t>(peer) << kSourceShift, kSourceMask, 0, &info);
  if (message == nullptr) return {};
  const ucp_tag_t tag = info.sender_tag & ~(kSourceMask | kAckFlag | kUserAckRequest);
  return str((info.sender_tag & kAckFlag) ? "an acknowledgement of " : "", describe_tag(tag), ", ",
             info.length, " bytes");
}

bool UcxTransport::supports(MemoryType mem) const {
  if (mem == MemoryType::Host) return true;
  return (memory_types_ & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
}

std::string UcxTransport::describe() const {
  std::string types = "host";
  if (memory_types_ & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) types += ", cuda";
  if (memory_types_ & UCS_BIT(UCS_MEMORY_TYPE_CUDA_MANAGED)) types += ", cuda-managed";
  return str("ucx ", version(), "; memory types: ", types);
}

}  // namespace tutti
