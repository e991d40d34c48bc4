! A Fortran MPI program (mpif.h's interfaces through `use mpi`) that knows
! nothing of tutti: each collective libtutti-mpi binds for Fortran, blocking
! and non-blocking (completed by each of the wait and test functions, also
! beside MPI's own requests), on rank-dependent data, checked against what
! MPI defines.
! Prints "fortran: N checks, M failed". Run with LD_PRELOAD=libtutti-mpi.so
! (tests/interpose/run.sh fortran), its calls must run in tutti.
program fortran_test
  use mpi
  implicit none
  integer, parameter :: n = 37
  integer :: ierr, rank, nranks, root, i, r, checks, failed, comm
  double precision, allocatable :: a(:), b(:), c(:), big(:), res(:)
  integer, allocatable :: counts(:), displs(:), ones(:), offsets(:)
  integer :: ia(n), ib(n)
  integer :: req, reqs(4), status(MPI_STATUS_SIZE), statuses(MPI_STATUS_SIZE, 4)
  integer :: idx, outcount, indices(4), seen, ring_in, ring_out, length, code
  logical :: flag
  double precision :: deadline
  character(len=MPI_MAX_ERROR_STRING) :: text

  call mpi_init(ierr)
  call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
  call mpi_comm_size(MPI_COMM_WORLD, nranks, ierr)
  checks = 0
  failed = 0
  root = nranks - 1
  allocate(a(n), b(n), c(n), big(n * nranks), res(n * nranks), counts(nranks), displs(nranks))
  allocate(ones(nranks), offsets(nranks))

  ! allreduce, then in place (MPI_IN_PLACE is a Fortran variable)
  do i = 1, n
    a(i) = rank + i
  end do
  call mpi_allreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call expect(ierr == 0 .and. all_equal(b, [(dble(nranks * i + nranks * (nranks - 1) / 2), i = 1, n)]), &
              'allreduce')
  call mpi_allreduce(MPI_IN_PLACE, a, n, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  call expect(ierr == 0 .and. all_equal(a, [(dble(nranks - 1 + i), i = 1, n)]), 'allreduce in place')

  ! integer allreduce through a duplicated communicator
  call mpi_comm_dup(MPI_COMM_WORLD, comm, ierr)
  ia = rank + 1
  call mpi_allreduce(ia, ib, n, MPI_INTEGER, MPI_SUM, comm, ierr)
  call expect(ierr == 0 .and. all(ib == nranks * (nranks + 1) / 2), 'allreduce integer, dup')
  call mpi_comm_free(comm, ierr)

  ! reduce to the last rank
  a = rank
  b = -1
  call mpi_reduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, root, MPI_COMM_WORLD, ierr)
  if (rank == root) then
    call expect(ierr == 0 .and. all(b == dble(nranks * (nranks - 1) / 2)), 'reduce')
  else
    call expect(ierr == 0, 'reduce')
  end if

  ! bcast from the last rank
  a = rank
  call mpi_bcast(a, n, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD, ierr)
  call expect(ierr == 0 .and. all(a == dble(root)), 'bcast')

  ! allgather, gather, scatter
  a = rank
  call mpi_allgather(a, n, MPI_DOUBLE_PRECISION, big, n, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  call expect(ierr == 0 .and. all_equal(big, [((dble(r), i = 1, n), r = 0, nranks - 1)]), 'allgather')
  big = -1
  call mpi_gather(a, n, MPI_DOUBLE_PRECISION, big, n, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD, ierr)
  if (rank == root) then
    call expect(ierr == 0 .and. all_equal(big, [((dble(r), i = 1, n), r = 0, nranks - 1)]), 'gather')
  else
    call expect(ierr == 0, 'gather')
  end if
  do r = 0, nranks - 1
    big(r * n + 1:(r + 1) * n) = 100 * r
  end do
  call mpi_scatter(big, n, MPI_DOUBLE_PRECISION, b, n, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD, ierr)
  call expect(ierr == 0 .and. all(b == dble(100 * rank)), 'scatter')

  ! reduce_scatter_block and reduce_scatter (equal counts)
  big = 1
  call mpi_reduce_scatter_block(big, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call expect(ierr == 0 .and. all(b == dble(nranks)), 'reduce_scatter_block')
  counts = n
  b = 0
  call mpi_reduce_scatter(big, b, counts, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call expect(ierr == 0 .and. all(b == dble(nranks)), 'reduce_scatter')

  ! alltoall and alltoallv: block r of rank s holds 1000 s + r
  do r = 0, nranks - 1
    big(r * n + 1:(r + 1) * n) = 1000 * rank + r
  end do
  call mpi_alltoall(big, n, MPI_DOUBLE_PRECISION, res, n, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  call expect(ierr == 0 .and. all_equal(res, [((dble(1000 * r + rank), i = 1, n), r = 0, nranks - 1)]), &
              'alltoall')
  displs = [(r * n, r = 0, nranks - 1)]
  res = -1
  call mpi_alltoallv(big, counts, displs, MPI_DOUBLE_PRECISION, res, counts, displs, &
                     MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  call expect(ierr == 0 .and. all_equal(res, [((dble(1000 * r + rank), i = 1, n), r = 0, nranks - 1)]), &
              'alltoallv')

  ! iallreduce completed by wait
  a = rank + 1
  call mpi_iallreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  call expect(ierr == 0 .and. req /= MPI_REQUEST_NULL, 'iallreduce started')
  call mpi_wait(req, status, ierr)
  call expect(ierr == 0 .and. req == MPI_REQUEST_NULL .and. all(b == dble(nranks * (nranks + 1) / 2)), &
              'iallreduce, wait')

  ! ibcast completed by a test loop (bounded in time: a request nobody
  ! drives never completes)
  a = rank
  call mpi_ibcast(a, n, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD, req, ierr)
  flag = .false.
  deadline = mpi_wtime() + 30
  do while (.not. flag .and. mpi_wtime() < deadline)
    call mpi_test(req, flag, MPI_STATUS_IGNORE, ierr)
  end do
  call expect(flag .and. ierr == 0 .and. req == MPI_REQUEST_NULL .and. all(a == dble(root)), &
              'ibcast, test')

  ! iallgather and ireduce beside MPI's own isend/irecv, completed by waitall
  a = rank
  b = -1
  ring_out = rank
  ring_in = -1
  call mpi_iallgather(a, n, MPI_DOUBLE_PRECISION, big, n, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, &
                      reqs(1), ierr)
  call mpi_irecv(ring_in, 1, MPI_INTEGER, modulo(rank - 1, nranks), 7, MPI_COMM_WORLD, reqs(2), ierr)
  call mpi_ireduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, root, MPI_COMM_WORLD, reqs(3), ierr)
  call mpi_isend(ring_out, 1, MPI_INTEGER, modulo(rank + 1, nranks), 7, MPI_COMM_WORLD, reqs(4), ierr)
  call mpi_waitall(4, reqs, statuses, ierr)
  call expect(ierr == 0 .and. all(reqs == MPI_REQUEST_NULL), 'waitall')
  call expect(all_equal(big, [((dble(r), i = 1, n), r = 0, nranks - 1)]), 'iallgather, waitall')
  call expect(ring_in == modulo(rank - 1, nranks) .and. &
              statuses(MPI_SOURCE, 2) == modulo(rank - 1, nranks) .and. statuses(MPI_TAG, 2) == 7, &
              'irecv beside collectives, waitall')
  if (rank == root) call expect(all(b == dble(nranks * (nranks - 1) / 2)), 'ireduce, waitall')

  ! ialltoall and ireduce_scatter_block, completed by waitany (1-based indices)
  do r = 0, nranks - 1
    big(r * n + 1:(r + 1) * n) = 1000 * rank + r
  end do
  call mpi_ialltoall(big, n, MPI_DOUBLE_PRECISION, res, n, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, &
                     reqs(1), ierr)
  ia = 1
  call mpi_ireduce_scatter_block(ia, ib, n / nranks, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, reqs(2), ierr)
  seen = 0
  do i = 1, 2
    call mpi_waitany(2, reqs, idx, status, ierr)
    call expect(ierr == 0 .and. (idx == 1 .or. idx == 2), 'waitany index')
    if (idx == 1 .or. idx == 2) seen = seen + idx
  end do
  call expect(seen == 3 .and. all(reqs(1:2) == MPI_REQUEST_NULL), 'waitany completed both')
  call mpi_waitany(2, reqs, idx, status, ierr)
  call expect(ierr == 0 .and. idx == MPI_UNDEFINED, 'waitany with none active')
  call expect(all_equal(res, [((dble(1000 * r + rank), i = 1, n), r = 0, nranks - 1)]), &
              'ialltoall, waitany')
  call expect(all(ib(1:n / nranks) == nranks), 'ireduce_scatter_block, waitany')

  ! igather, iscatter, ialltoallv, ireduce_scatter, completed by waitsome
  a = rank
  counts = n
  displs = [(r * n, r = 0, nranks - 1)]
  res = -1
  call mpi_igather(a, n, MPI_DOUBLE_PRECISION, res, n, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD, &
                   reqs(1), ierr)
  do r = 0, nranks - 1
    big(r * n + 1:(r + 1) * n) = 100 * r
  end do
  call mpi_iscatter(big, n, MPI_DOUBLE_PRECISION, b, n, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD, &
                    reqs(2), ierr)
  ia = rank
  ib = -1
  ones = 1
  offsets = [(r, r = 0, nranks - 1)]
  call mpi_ialltoallv(ia, ones, offsets, MPI_INTEGER, ib, ones, offsets, MPI_INTEGER, MPI_COMM_WORLD, &
                      reqs(3), ierr)
  call mpi_ireduce_scatter(big, c, counts, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, reqs(4), ierr)
  seen = 0
  do while (seen < 4)
    call mpi_waitsome(4, reqs, outcount, indices, statuses, ierr)
    if (ierr /= 0 .or. outcount < 1 .or. outcount > 4) exit
    call expect(all(indices(1:outcount) >= 1 .and. indices(1:outcount) <= 4), 'waitsome indices')
    seen = seen + outcount
  end do
  call expect(seen == 4 .and. all(reqs == MPI_REQUEST_NULL), 'waitsome completed all')
  if (rank == root) call expect(all_equal(res, [((dble(r), i = 1, n), r = 0, nranks - 1)]), 'igather')
  call expect(all(b == dble(100 * rank)), 'iscatter')
  call expect(all(ib(1:nranks) == [(r, r = 0, nranks - 1)]), 'ialltoallv')
  call expect(all(c == dble(100 * nranks * rank)), 'ireduce_scatter')

  ! testall, testany and testsome loops
  a = rank
  call mpi_iallreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_MIN, MPI_COMM_WORLD, reqs(1), ierr)
  call mpi_ibarrier(MPI_COMM_WORLD, reqs(2), ierr)
  flag = .false.
  deadline = mpi_wtime() + 30
  do while (.not. flag .and. mpi_wtime() < deadline)
    call mpi_testall(2, reqs, flag, MPI_STATUSES_IGNORE, ierr)
  end do
  call expect(flag .and. ierr == 0 .and. all(reqs(1:2) == MPI_REQUEST_NULL) .and. all(b == 0d0), &
              'iallreduce, ibarrier, testall')
  call mpi_ibarrier(MPI_COMM_WORLD, reqs(1), ierr)
  flag = .false.
  deadline = mpi_wtime() + 30
  do while (.not. flag .and. mpi_wtime() < deadline)
    call mpi_testany(1, reqs, idx, flag, status, ierr)
  end do
  call expect(flag .and. ierr == 0 .and. idx == 1 .and. reqs(1) == MPI_REQUEST_NULL, 'ibarrier, testany')
  call mpi_ibarrier(MPI_COMM_WORLD, reqs(1), ierr)
  outcount = 0
  deadline = mpi_wtime() + 30
  do while (outcount == 0 .and. mpi_wtime() < deadline)
    call mpi_testsome(1, reqs, outcount, indices, statuses, ierr)
  end do
  call expect(outcount == 1 .and. ierr == 0 .and. indices(1) == 1 .and. reqs(1) == MPI_REQUEST_NULL, &
              'ibarrier, testsome')

  ! request_get_status leaves the request to wait; request_free finishes it
  call mpi_iallreduce(MPI_IN_PLACE, ia, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, req, ierr)
  flag = .false.
  deadline = mpi_wtime() + 30
  do while (.not. flag .and. mpi_wtime() < deadline)
    call mpi_request_get_status(req, flag, status, ierr)
  end do
  call expect(flag .and. req /= MPI_REQUEST_NULL, 'request_get_status')
  call mpi_wait(req, MPI_STATUS_IGNORE, ierr)
  call expect(ierr == 0 .and. req == MPI_REQUEST_NULL .and. all(ia == nranks - 1), &
              'iallreduce in place, request_get_status, wait')
  call mpi_ibarrier(MPI_COMM_WORLD, req, ierr)
  call mpi_request_free(req, ierr)
  call expect(ierr == 0 .and. req == MPI_REQUEST_NULL, 'request_free')

  ! error_string: blank-padded text
  text = 'x'
  call mpi_error_string(MPI_ERR_ARG, text, length, ierr)
  call expect(ierr == 0 .and. length > 0 .and. length <= len(text) .and. text(length + 1:) == '', &
              'error_string')

  ! a bad root with MPI_ERRORS_RETURN: an error code, and (where tutti ran
  ! the call: more than one rank) tutti's message for it, with what tutti
  ! last reported (which only this library's MPI_Error_string adds)
  call mpi_comm_dup(MPI_COMM_WORLD, comm, ierr)
  call mpi_comm_set_errhandler(comm, MPI_ERRORS_RETURN, ierr)
  call mpi_bcast(a, n, MPI_DOUBLE_PRECISION, nranks + 5, comm, code)
  call expect(code /= 0, 'bcast with a bad root returns an error')
  text = ''
  call mpi_error_string(code, text, length, ierr)
  call expect(ierr == 0 .and. length > 0, 'error_string of the bad root')
  if (nranks >= 2) call expect(text(1:6) == 'tutti:' .and. index(text, 'root=') > 0, &
                               'error_string gives tutti''s message: ' // trim(text))
  call mpi_comm_free(comm, ierr)

  call mpi_barrier(MPI_COMM_WORLD, ierr)
  call expect(ierr == 0, 'barrier')

  call mpi_allreduce(MPI_IN_PLACE, failed, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, i0, a, i0, a)', 'fortran: ', checks, ' checks, ', failed, ' failed'
  call mpi_finalize(ierr)

contains

  logical function all_equal(x, y)
    double precision, intent(in) :: x(:), y(:)
    all_equal = size(x) == size(y)
    if (all_equal) all_equal = all(x == y)
  end function

  include 'expect.inc'

end program
