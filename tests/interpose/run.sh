#!/bin/bash
# Runs tests/interpose/mpi_only_test.cpp under mpirun and checks what
# libtutti-mpi did, from its TUTTI_MPI_STATS line.
#   run.sh preload|trials|plain|off|churn|fortran NP LIBTUTTI_MPI MPI_ONLY_TEST
# preload: every call tutti can serve runs in tutti (TUTTI_MPI_TRIALS=0);
# trials: the default policy, which times both sides on the first calls of
# each size class and then keeps the faster; fortran: a Fortran program
# (fortran_test.f90, fortran_f08_test.f90) as preload, every one of its
# calls tutti's.
set -u
mode=$1 np=$2 lib=$(realpath "$3") exe=$(realpath "$4")
args=(-np "$np" --oversubscribe --bind-to none -x TUTTI_TIMEOUT -x TUTTI_MPI_STATS=1)
prog=("$exe")
case $mode in
  preload|fortran) args+=(-x LD_PRELOAD="$lib" -x TUTTI_MPI_TRIALS=0) ;;
  trials) args+=(-x LD_PRELOAD="$lib") ;;
  off) args+=(-x LD_PRELOAD="$lib" -x TUTTI_MPI=0) ;;
  churn) args+=(-x LD_PRELOAD="$lib"); prog+=(--churn 1000) ;;
  plain) ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
out=$(mpirun "${args[@]}" "${prog[@]}" 2>&1)
rc=$?
echo "$out"
fail() { echo "FAIL: $*"; exit 1; }
[ $rc -eq 0 ] || fail "mpirun exited with $rc"
echo "$out" | grep -q "checks, 0 failed" || fail "no clean summary line"
stats=$(echo "$out" | grep '^tutti-mpi: [0-9]* calls ran in tutti')
if [ "$mode" = plain ]; then
  [ -z "$stats" ] || fail "a stats line without the library"
  exit 0
fi
[ -n "$stats" ] || fail "no stats line from libtutti-mpi"
ran=$(echo "$stats" | sed -E 's/^tutti-mpi: ([0-9]+) calls ran in tutti.*/\1/')
case $mode in
  off) [ "$ran" -eq 0 ] || fail "TUTTI_MPI=0, yet $ran calls ran in tutti"
       echo "$stats" | grep -q "TUTTI_MPI=0" || fail "the reason TUTTI_MPI=0 is missing" ;;
  *) if [ "$np" -ge 2 ]; then
       [ "$ran" -gt 0 ] || fail "no call ran in tutti"
     fi
     if [ "$mode" = preload ]; then
       for reason in "datatype" "op" "one-rank communicator"; do
         echo "$stats" | grep -q "$reason" || fail "no call passed to MPI for: $reason"
       done
       if [ "$np" -ge 3 ]; then echo "$stats" | grep -q "uneven counts" || fail "no uneven-counts pass"; fi
       if [ "$np" -ge 2 ]; then echo "$out" | grep -q "^bad root: tutti:" || fail "the bad root's error is not tutti's"; fi
       if echo "$stats" | grep -q "trial"; then fail "trials with TUTTI_MPI_TRIALS=0"; fi
     fi
     if [ "$mode" = fortran ]; then
       if [ "$np" -ge 2 ]; then
         echo "$stats" | grep -q " 0 passed to MPI" || fail "Fortran calls passed to MPI"
       else  # one rank: every call goes to MPI, for that reason alone
         echo "$stats" | grep -Eq "^tutti-mpi: 0 calls ran in tutti, ([0-9]+) passed to MPI \(\1 one-rank communicator\)$" ||
           fail "one rank: not every call passed to MPI as a one-rank communicator"
       fi
     fi
     if [ "$mode" = trials ]; then
       echo "$stats" | grep -q " trial" || fail "no trial calls on MPI"
     fi ;;
esac
echo "PASS: $stats"
