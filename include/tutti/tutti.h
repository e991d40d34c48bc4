/*
 * tutti: collective communication for HPC clusters.
 *
 * An MPI-like C API. MPI bootstraps the job; tutti_comm_create turns an MPI
 * communicator into a tutti communicator whose collectives run tutti's own
 * algorithms over UCX (or MPI point-to-point), falling back to the MPI
 * library's collective where no tutti algorithm fits.
 *
 * Every function returns a tutti_status_t (as int). On failure
 * tutti_last_error() says what went wrong, for the calling thread.
 *
 * Threading: a communicator must be used by one thread at a time.
 */
#ifndef TUTTI_TUTTI_H
#define TUTTI_TUTTI_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TUTTI_VERSION_MAJOR 0
#define TUTTI_VERSION_MINOR 1
#define TUTTI_VERSION_PATCH 0

/* In C++ the enums have int as their underlying type, so that any int a
 * caller passes (an invalid datatype, say) is a value tutti can reject
 * rather than undefined behaviour; the ABI is that of int either way. */
#ifdef __cplusplus
#define TUTTI_ENUM_BASE : int
#else
#define TUTTI_ENUM_BASE
#endif

typedef enum TUTTI_ENUM_BASE {
  TUTTI_SUCCESS = 0,
  TUTTI_ERR_INVALID_ARGUMENT,
  TUTTI_ERR_UNSUPPORTED,
  TUTTI_ERR_TIMEOUT,
  TUTTI_ERR_TRANSPORT,
  TUTTI_ERR_OUT_OF_MEMORY,
  TUTTI_ERR_MISMATCH,
  TUTTI_ERR_INTERNAL
} tutti_status_t;

typedef enum TUTTI_ENUM_BASE {
  TUTTI_INT8,
  TUTTI_UINT8,
  TUTTI_INT32,
  TUTTI_UINT32,
  TUTTI_INT64,
  TUTTI_UINT64,
  TUTTI_FLOAT16,
  TUTTI_BFLOAT16,
  TUTTI_FLOAT32,
  TUTTI_FLOAT64
} tutti_datatype_t;

/* TUTTI_AVG is the sum divided by the number of ranks (integers: truncating
 * division of the sum, which wraps like the type's own arithmetic). */
typedef enum TUTTI_ENUM_BASE { TUTTI_SUM, TUTTI_PROD, TUTTI_MIN, TUTTI_MAX, TUTTI_AVG } tutti_op_t;

typedef struct tutti_comm *tutti_comm_t;
typedef struct tutti_request *tutti_request_t;

/* Same meaning as MPI_IN_PLACE (which tutti also accepts). */
#define TUTTI_IN_PLACE ((void *)2)

/* Defaults of the environment (README, "Environment variables"):
 * TUTTI_TIMEOUT when unset, and TUTTI_SLEEP_AFTER on nodes whose ranks share
 * cores (also what the torch backend asks for). */
#define TUTTI_DEFAULT_TIMEOUT_S 300
#define TUTTI_SHARED_CORES_SLEEP_AFTER_US 5000

/* ---- communicators ---------------------------------------------------- */
/* Collective over mpi_comm, an intra-communicator (inter-communicators are refused). */
int tutti_comm_create(MPI_Comm mpi_comm, tutti_comm_t *comm);
/* Collective; NULL is a no-op. Refused (TUTTI_ERR_INVALID_ARGUMENT) while
 * requests of comm are not yet completed by tutti_wait/tutti_test, and after
 * MPI_Finalize. */
int tutti_comm_destroy(tutti_comm_t comm);
int tutti_comm_rank(tutti_comm_t comm, int *rank);
int tutti_comm_size(tutti_comm_t comm, int *size);
/* Not collective. Every operation in flight on comm, here and (as soon as
 * they wait) on the other ranks, and every later one, fails with
 * TUTTI_ERR_TRANSPORT and a message naming the aborting rank. May be called
 * from another thread while a call on comm is blocked (a watchdog): that
 * call ends. The communicator can then only be destroyed
 * (tutti_comm_destroy is still collective: every live rank must call it). */
int tutti_comm_abort(tutti_comm_t comm);

/* ---- errors ------------------------------------------------------------- */
const char *tutti_strerror(int status);
const char *tutti_last_error(void); /* per-thread detail of the last failure */
const char *tutti_version(void);

/* ---- blocking collectives (MPI semantics, counts in elements) ----------- */
int tutti_allreduce(const void *sendbuf, void *recvbuf, size_t count, tutti_datatype_t dt,
                    tutti_op_t op, tutti_comm_t comm);
int tutti_reduce(const void *sendbuf, void *recvbuf, size_t count, tutti_datatype_t dt,
                 tutti_op_t op, int root, tutti_comm_t comm);
int tutti_bcast(void *buf, size_t count, tutti_datatype_t dt, int root, tutti_comm_t comm);
/* count per rank */
int tutti_allgather(const void *sendbuf, void *recvbuf, size_t count, tutti_datatype_t dt,
                    tutti_comm_t comm);
/* like MPI_Reduce_scatter_block */
int tutti_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                         tutti_datatype_t dt, tutti_op_t op, tutti_comm_t comm);
int tutti_gather(const void *sendbuf, void *recvbuf, size_t count, tutti_datatype_t dt, int root,
                 tutti_comm_t comm);
int tutti_scatter(const void *sendbuf, void *recvbuf, size_t count, tutti_datatype_t dt, int root,
                  tutti_comm_t comm);
int tutti_alltoall(const void *sendbuf, void *recvbuf, size_t count, tutti_datatype_t dt,
                   tutti_comm_t comm);
/* counts and displacements in elements */
int tutti_alltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                    void *recvbuf, const size_t *recvcounts, const size_t *rdispls,
                    tutti_datatype_t dt, tutti_comm_t comm);
int tutti_barrier(tutti_comm_t comm);

/* ---- point-to-point (tag >= 0) ------------------------------------------ */
/* A receive matches a send of the same tag from `peer` whose size is exactly
 * count elements (another size: TUTTI_ERR_MISMATCH); messages between one
 * pair with one tag arrive in the order sent. A receive's peer may be
 * TUTTI_ANY_SOURCE: it then matches such a message from any rank (itself
 * included), the earliest posted receive first, like MPI_ANY_SOURCE. */
#define TUTTI_ANY_SOURCE (-1)
int tutti_send(const void *buf, size_t count, tutti_datatype_t dt, int peer, int tag,
               tutti_comm_t comm);
int tutti_recv(void *buf, size_t count, tutti_datatype_t dt, int peer, int tag, tutti_comm_t comm);
/* Like tutti_recv / tutti_irecv, and *source (if source is not NULL) is set
 * to the rank the message came from once the receive has succeeded (for
 * tutti_irecv_from: when tutti_wait or tutti_test completes the request, so
 * *source must stay valid until then). */
int tutti_recv_from(void *buf, size_t count, tutti_datatype_t dt, int peer, int tag,
                    tutti_comm_t comm, int *source);

/* ---- non-blocking: same arguments plus a request ------------------------ */
int tutti_iallreduce(const void *sendbuf, void *recvbuf, size_t count, tutti_datatype_t dt,
                     tutti_op_t op, tutti_comm_t comm, tutti_request_t *req);
int tutti_ireduce(const void *sendbuf, void *recvbuf, size_t count, tutti_datatype_t dt,
                  tutti_op_t op, int root, tutti_comm_t comm, tutti_request_t *req);
int tutti_ibcast(void *buf, size_t count, tutti_datatype_t dt, int root, tutti_comm_t comm,
                 tutti_request_t *req);
int tutti_iallgather(const void *sendbuf, void *recvbuf, size_t count, tutti_datatype_t dt,
                     tutti_comm_t comm, tutti_request_t *req);
int tutti_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                          tutti_datatype_t dt, tutti_op_t op, tutti_comm_t comm,
                          tutti_request_t *req);
int tutti_igather(const void *sendbuf, void *recvbuf, size_t count, tutti_datatype_t dt, int root,
                  tutti_comm_t comm, tutti_request_t *req);
int tutti_iscatter(const void *sendbuf, void *recvbuf, size_t count, tutti_datatype_t dt,
                   int root, tutti_comm_t comm, tutti_request_t *req);
int tutti_ialltoall(const void *sendbuf, void *recvbuf, size_t count, tutti_datatype_t dt,
                    tutti_comm_t comm, tutti_request_t *req);
int tutti_ialltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                     void *recvbuf, const size_t *recvcounts, const size_t *rdispls,
                     tutti_datatype_t dt, tutti_comm_t comm, tutti_request_t *req);
int tutti_ibarrier(tutti_comm_t comm, tutti_request_t *req);
int tutti_isend(const void *buf, size_t count, tutti_datatype_t dt, int peer, int tag,
                tutti_comm_t comm, tutti_request_t *req);
int tutti_irecv(void *buf, size_t count, tutti_datatype_t dt, int peer, int tag, tutti_comm_t comm,
                tutti_request_t *req);
int tutti_irecv_from(void *buf, size_t count, tutti_datatype_t dt, int peer, int tag,
                     tutti_comm_t comm, int *source, tutti_request_t *req);

int tutti_wait(tutti_request_t *req);            /* completes and frees; sets *req = NULL */
int tutti_test(tutti_request_t *req, int *done); /* frees and sets *req = NULL once done */
/* Like tutti_wait with its own limit (seconds; 0 = forever) instead of TUTTI_TIMEOUT.
 * On TUTTI_ERR_TIMEOUT the request is cancelled and freed (*req = NULL). A
 * receive that timed out is withdrawn and the communicator stays usable (a
 * later receive takes the message it waited for); any other call that timed
 * out leaves the communicator failed (later calls: TUTTI_ERR_TRANSPORT). */
int tutti_wait_timeout(tutti_request_t *req, double seconds);
/* One round of progress on the operations in flight on every communicator,
 * for another library's progress engine (libtutti-mpi calls it from Open
 * MPI's, so that a rank blocked in the MPI library still does its part of
 * tutti's non-blocking calls). *events (if not NULL) is set to how many
 * events it found. Does nothing where more than one thread has called tutti
 * in this process, or when called from inside a tutti call. */
int tutti_progress(int *events);

/* ---- grouped calls (NCCL's model) ---------------------------------------- */
/* Calls made on this thread between tutti_group_start and tutti_group_end
 * (collectives and point-to-point, blocking or not, on any communicators)
 * are checked and recorded, not started: each returns at once. At the
 * outermost tutti_group_end they start together, per communicator in call
 * order; small allreduces of one datatype and op on host buffers are fused
 * into one allreduce over a packed buffer (TUTTI_GROUP_FUSE_BYTES), which is
 * what gradient buckets need. Every rank must group the same calls in the
 * same order. tutti_group_end returns once the blocking calls of the group
 * have completed (their buffers are final then), with the first error among
 * them; the requests of its non-blocking calls complete through
 * tutti_wait/tutti_test as usual, and may not be waited on before the group
 * ended (TUTTI_ERR_INVALID_ARGUMENT). Groups nest: only the outermost end
 * starts the calls. Under TUTTI_CHECK each grouped call is agreed on by
 * itself and nothing is fused, so a mismatched group is TUTTI_ERR_MISMATCH
 * naming the call that differs. */
int tutti_group_start(void);
int tutti_group_end(void);

/* ---- CUDA --------------------------------------------------------------- */
/* Every call accepts CUDA device (and managed) buffers like host buffers,
 * detected per call; send and receive buffers may differ in memory type.
 * Without a stream (the default, CUDA-aware MPI style) the buffers must be
 * ready when the call is made (e.g. after cudaStreamSynchronize), and they
 * are final when the call (or tutti_wait/tutti_test) completes.
 *
 * With a stream set, later calls on `comm` are ordered on it: a call does not
 * touch its buffers before the work enqueued on the stream before the call
 * has finished (tutti records an event and polls it; the host does not
 * wait, and tutti_i* calls return at once), and the device work tutti does
 * for the call is made to precede the work later enqueued on the stream
 * (cudaStreamWaitEvent). The call itself still completes like any other: a
 * blocking call returns once the collective is complete, a tutti_i* call
 * once tutti_wait/tutti_test says so, after which dependent work may be
 * enqueued on the stream. cuda_stream is a cudaStream_t of the current
 * device (cudaStreamLegacy and cudaStreamPerThread work too); NULL removes
 * it. TUTTI_ERR_UNSUPPORTED where tutti was built without CUDA or no device
 * is present. See docs/CUDA.md. */
int tutti_comm_set_stream(tutti_comm_t comm, void *cuda_stream);

/* ---- introspection and control ------------------------------------------ */
/* Forces an algorithm for one collective on this communicator, like the
 * TUTTI_ALGO_<COLLECTIVE> environment variable ("allreduce", "ring").
 * algorithm NULL or "" removes the override. */
int tutti_comm_force_algorithm(tutti_comm_t comm, const char *collective, const char *algorithm);
/* The algorithm the last collective call on this communicator ran: "none"
 * after a call with nothing to move (count 0), which runs no algorithm. */
const char *tutti_comm_last_algorithm(tutti_comm_t comm);

typedef struct {
  uint64_t collectives;         /* collective calls started */
  uint64_t mpi_fallbacks;       /* calls that ran the MPI library's own collective */
  uint64_t refused_fallbacks;   /* calls whose preferred algorithm refused them */
  uint64_t schedule_cache_hits; /* schedules reused instead of rebuilt */
  uint64_t schedule_builds;     /* schedules built */
  uint64_t grouped_calls;       /* calls started by tutti_group_end */
  uint64_t fused_calls;         /* of those, allreduces that ran fused with others */
} tutti_comm_stats_t;
int tutti_comm_stats(tutti_comm_t comm, tutti_comm_stats_t *stats);

#ifdef __cplusplus
}
#endif

#endif /* TUTTI_TUTTI_H */
