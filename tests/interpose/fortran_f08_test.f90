! The same idea through the mpi_f08 module (derived-type handles), whose
! calls reach libtutti-mpi through Open MPI's ompi_*_f functions. Prints
! "fortran: N checks, M failed".
program fortran_f08_test
  use mpi_f08
  implicit none
  integer, parameter :: n = 101
  integer :: rank, nranks, i, checks, failed, ierr
  real :: a(n), b(n)

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
  call MPI_Allreduce(MPI_IN_PLACE, failed, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a, i0, a)', 'fortran: ', checks, ' checks, ', failed, ' failed'
  call MPI_Finalize()

contains

  include 'expect.inc'

end program
