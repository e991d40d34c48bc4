! The same idea through the mpi_f08 module (derived-type handles), whose
! calls reach libtutti-mpi through Open MPI's ompi_*_f functions, except
! MPI_Test & co., which it calls through pmpi_test_ & co. Prints
! "fortran: N checks, M failed".
program fortran_f08_test
  use mpi_f08
  implicit none
  integer, parameter :: n = 101
  integer :: rank, nranks, i, checks, failed, ierr
  real :: a(n), b(n), c(n)
  type(MPI_Request) :: req, reqs(2)
  type(MPI_Status) :: status
  integer :: idx, outcount, indices(2)
  logical :: flag
  double precision :: deadline

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  checks = 0
  failed = 0
  a = [(real(rank + i), i = 1, n)]
  call MPI_Allreduce(a, b, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call expect(ierr == 0 .and. all(b == [(real(nranks * i + nranks * (nranks - 1) / 2), i = 1, n)]), &
              'allreduce')
  call MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_REAL, MPI_MIN, MPI_COMM_WORLD, ierr)
  call expect(ierr == 0 .and. all(a == [(real(i), i = 1, n)]), 'allreduce in place')
  a = rank
  call MPI_Bcast(a, n, MPI_REAL, nranks - 1, MPI_COMM_WORLD, ierr)
  call expect(ierr == 0 .and. all(a == real(nranks - 1)), 'bcast')
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call expect(ierr == 0, 'barrier')

  ! non-blocking, completed by each wait and test function
  a = rank + 1
  call MPI_Iallreduce(a, b, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  call MPI_Wait(req, status, ierr)
  call expect(ierr == 0 .and. req == MPI_REQUEST_NULL .and. all(b == real(nranks * (nranks + 1) / 2)), &
              'iallreduce, wait')
  a = rank
  call MPI_Ibcast(a, n, MPI_REAL, 0, MPI_COMM_WORLD, req, ierr)
  flag = .false.
  deadline = MPI_Wtime() + 30
  do while (.not. flag .and. MPI_Wtime() < deadline)
    call MPI_Test(req, flag, MPI_STATUS_IGNORE, ierr)
  end do
  call expect(flag .and. ierr == 0 .and. req == MPI_REQUEST_NULL .and. all(a == 0.0), 'ibcast, test')
  a = rank
  call MPI_Iallreduce(a, b, n, MPI_REAL, MPI_MAX, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Ibarrier(MPI_COMM_WORLD, reqs(2), ierr)
  flag = .false.
  deadline = MPI_Wtime() + 30
  do while (.not. flag .and. MPI_Wtime() < deadline)
    call MPI_Testall(2, reqs, flag, MPI_STATUSES_IGNORE, ierr)
  end do
  call expect(flag .and. ierr == 0 .and. all(b == real(nranks - 1)), 'iallreduce, ibarrier, testall')
  call MPI_Ibarrier(MPI_COMM_WORLD, reqs(1), ierr)
  flag = .false.
  deadline = MPI_Wtime() + 30
  do while (.not. flag .and. MPI_Wtime() < deadline)
    call MPI_Testany(1, reqs, idx, flag, status, ierr)
  end do
  call expect(flag .and. ierr == 0 .and. idx == 1, 'ibarrier, testany')
  call MPI_Ibarrier(MPI_COMM_WORLD, reqs(1), ierr)
  outcount = 0
  deadline = MPI_Wtime() + 30
  do while (outcount == 0 .and. MPI_Wtime() < deadline)
    call MPI_Testsome(1, reqs, outcount, indices, MPI_STATUSES_IGNORE, ierr)
  end do
  call expect(outcount == 1 .and. ierr == 0 .and. indices(1) == 1, 'ibarrier, testsome')
  call MPI_Iallreduce(a, c, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  flag = .false.
  deadline = MPI_Wtime() + 30
  do while (.not. flag .and. MPI_Wtime() < deadline)
    call MPI_Request_get_status(req, flag, status, ierr)
  end do
  call expect(flag .and. req /= MPI_REQUEST_NULL, 'request_get_status')
  call MPI_Ibarrier(MPI_COMM_WORLD, reqs(1), ierr)
  reqs(2) = req
  call MPI_Waitany(2, reqs, idx, status, ierr)
  call expect(ierr == 0 .and. (idx == 1 .or. idx == 2), 'waitany')
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  call expect(ierr == 0 .and. all(reqs == MPI_REQUEST_NULL) .and. &
              all(c == real(nranks * (nranks - 1) / 2)), 'waitall')
  call MPI_Allreduce(MPI_IN_PLACE, failed, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a, i0, a)', 'fortran: ', checks, ' checks, ', failed, ' failed'
  call MPI_Finalize()

contains

  include 'expect.inc'

end program
