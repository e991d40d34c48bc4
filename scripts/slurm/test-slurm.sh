#!/usr/bin/env bash
# Tests scripts/slurm/*.sbatch under a real Slurm: brings up a one-node Slurm
# cluster on localhost from Debian's packages (installed if missing), submits
# test.sbatch, bench.sbatch and tune.sbatch with `sbatch --wait`, checks their
# exit codes and output, and tears the cluster down from a trap on every exit
# path. Bounded in time (TUTTI_SLURM_TEST_TIMEOUT seconds per job, 300).
#
#   scripts/slurm/test-slurm.sh BUILD_DIR
#
# Exit: 0 passed, 1 failed, 77 skipped (not root, or Slurm already runs here).
# Needs no cgroups or systemd: proctrack/linuxproc, task/none.
set -uo pipefail

build=$(cd "${1:-build}" && pwd) || { echo "test-slurm: no build dir '${1:-build}'"; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
job_timeout=${TUTTI_SLURM_TEST_TIMEOUT:-300}

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: the Slurm test starts slurmctld, slurmd and munged, which needs root"
  exit 77
fi
if pgrep -x slurmctld >/dev/null || pgrep -x slurmd >/dev/null; then
  echo "SKIP: a Slurm daemon already runs on this machine; not starting a second cluster"
  exit 77
fi

# Debian's packages (the PMIx plugin is in slurm-wlm-basic-plugins and
# loads libpmix2's libpmix.so).
packages=(slurm-wlm munge libpmix-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "test-slurm: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >/tmp/test-slurm-apt.log 2>&1; then
    echo "FAIL: could not install ${missing[*]} (see /tmp/test-slurm-apt.log)"
    exit 1
  fi
fi

tmp=$(mktemp -d /tmp/tutti-slurm-test.XXXXXX)
chmod 755 "$tmp"
pids=()            # daemons this script started, stopped by the trap
munged_pid=""      # munged, if this script started it
failures=0

teardown() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "${SLURM_CONF:-}" ] && command -v scancel >/dev/null; then
    scancel --quiet --user=root 2>/dev/null || true
  fi
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  # Reap them: stopped daemons linger briefly as zombies otherwise.
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ -n "$munged_pid" ]; then
    kill -TERM "$munged_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$munged_pid" 2>/dev/null || break; sleep 0.1; done
  fi
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
    for log in "$tmp"/slurmctld.log "$tmp"/slurmd.log; do
      [ -f "$log" ] && { echo "---- last lines of $log"; tail -n 20 "$log"; }
    done
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT TERM

# munge: the system's if it runs, else started here as the munge user.
if ! pgrep -x munged >/dev/null; then
  [ -s /etc/munge/munge.key ] || {
    mkdir -p /etc/munge
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
    chown munge:munge /etc/munge/munge.key
    chmod 400 /etc/munge/munge.key
  }
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge
  chmod 755 /run/munge
  runuser -u munge -- /usr/sbin/munged || { echo "FAIL: munged did not start"; exit 1; }
  for _ in $(seq 50); do [ -s /run/munge/munged.pid ] && break; sleep 0.1; done
  munged_pid=$(cat /run/munge/munged.pid 2>/dev/null)
fi
munge -n | unmunge >/dev/null || { echo "FAIL: munge does not work"; exit 1; }

# Ports apart from a real cluster's defaults (6817/6818).
port=$((20000 + RANDOM % 20000))
mkdir -p "$tmp/state" "$tmp/spool"
cat > "$tmp/slurm.conf" <<CONF
ClusterName=tutti-test
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=pmix
MailProg=/bin/true
ReturnToService=2
SchedulerType=sched/builtin
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
NodeName=localhost CPUs=4 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=30 State=UP OverSubscribe=YES
CONF
export SLURM_CONF=$tmp/slurm.conf   # every client needs it

/usr/sbin/slurmctld -D -i >"$tmp/slurmctld.out" 2>&1 &
pids+=($!)
/usr/sbin/slurmd -D -N localhost >"$tmp/slurmd.out" 2>&1 &
pids+=($!)
ready=0
for _ in $(seq 300); do
  if scontrol ping 2>/dev/null | grep -q UP &&
     [ "$(sinfo -h -n localhost -o %T 2>/dev/null)" = idle ]; then
    ready=1
    break
  fi
  sleep 0.1
done
if [ $ready -ne 1 ]; then
  echo "FAIL: the Slurm cluster did not come up in 30 s"
  cat "$tmp/slurmctld.out" "$tmp/slurmd.out"
  exit 1
fi
echo "test-slurm: Slurm $(sinfo -V | cut -d' ' -f2) up on localhost (port $port)"

# The jobs see the build tree and oversubscription-safe Open MPI settings.
export TUTTI_BUILD=$build
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl=${OMPI_MCA_btl:-^openib,ofi}
export TUTTI_TIMEOUT=120

# Submits one script and waits; "$@": sbatch options, the script, its arguments.
submit() {
  local name=$1 out=$tmp/$1.out
  shift
  echo "== sbatch --wait $*"
  # The command line overrides the scripts' #SBATCH shape: 2 ranks here.
  timeout "$job_timeout" sbatch --wait --quiet -N 1 -n 2 --ntasks-per-node=2 -O --time=10 \
    --output="$out" --chdir="$tmp" "$@"
  local rc=$?
  echo "-- $name: exit $rc; output:"
  sed 's/^/   /' "$out" 2>/dev/null
  return $rc
}

check() {  # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what"; failures=$((failures + 1)); fi
}

submit test "$here/test.sbatch" "[api],[tuning]"
check "test.sbatch exits 0" test $? -eq 0
# Catch2 prints its summary on every rank: 2 ranks x 2 transports.
check "test.sbatch ran the tests on both transports, every rank passing" \
  test "$(grep -c '^All tests passed' "$tmp/test.out")" -eq 4

submit bench "$here/bench.sbatch" --op all --check --max-bytes 64K --iters 5 --warmup 2
check "bench.sbatch exits 0" test $? -eq 0
check "bench.sbatch checked every result" grep -q '^# Checked: 0 wrong elements' "$tmp/bench.out"
check "bench.sbatch ran on 2 ranks" grep -q '2 ranks' "$tmp/bench.out"

TUTTI_TUNE_OUTPUT=$tmp/tuning.toml submit tune "$here/tune.sbatch" \
  --collectives allreduce,bcast --max-bytes 64K --step-factor 4 --iters 5
check "tune.sbatch exits 0" test $? -eq 0
check "tune.sbatch wrote a table for this cluster" grep -q '^cluster = "tutti-test"' "$tmp/tuning.toml"
check "tutti loads the table tune.sbatch wrote" \
  env TUTTI_TUNING_FILE="$tmp/tuning.toml" "$build/apps/tutti-info" --explain allreduce 1K 2

if [ $failures -eq 0 ]; then
  echo "test-slurm: all Slurm jobs passed"
  exit 0
fi
echo "test-slurm: $failures check(s) failed"
exit 1
