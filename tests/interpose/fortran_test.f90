! A Fortran MPI program (mpif.h's interfaces through `use mpi`) that knows
! nothing of tutti: each blocking collective libtutti-mpi binds for Fortran,
! on random-free but rank-dependent data, checked against what MPI defines.
! Prints "fortran: N checks, M failed". Run with LD_PRELOAD=libtutti-mpi.so
! (tests/interpose/run.sh fortran), its calls must run in tutti.
program fortran_test
  use mpi
  implicit none
  integer, parameter :: n = 37
  integer :: ierr, rank, nranks, root, i, r, checks, failed, comm
  double precision, allocatable :: a(:), b(:), big(:), res(:)
  integer, allocatable :: counts(:), displs(:)
  integer :: ia(n), ib(n)

  call mpi_init(ierr)
  call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
  call mpi_comm_size(MPI_COMM_WORLD, nranks, ierr)
  checks = 0
  failed = 0
  root = nranks - 1
  allocate(a(n), b(n), big(n * nranks), res(n * nranks), counts(nranks), displs(nranks))

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
