# Sourced by the scripts: Open MPI settings for this kind of machine.
# Root in containers needs the two ALLOW variables.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# No InfiniBand/libfabric here: keep Open MPI from probing (and warning).
export OMPI_MCA_btl=${OMPI_MCA_btl:-^openib,ofi}

# The mpirun options for $1 ranks on this machine. Where ranks outnumber
# cores: oversubscribe, and have Open MPI's ranks yield when idle (spinning
# ranks starve each other; tutti's yield by themselves). With a core per
# rank nothing: yielding would only slow Open MPI, and comparisons must run
# it as its users do.
oversubscribe_args() {
  [ "$1" -le "$(nproc)" ] || echo "--oversubscribe --mca mpi_yield_when_idle 1"
}

# The speed state the machine is in now, for $1 ranks (default 2) with the
# tutti-bench of build folder $2 (default build): the cache-line round trip
# between ranks 0 and 1 (tutti-bench --bounds, median of 200) is "close" up
# to FAR_RTT_US (0.25 us), else "far". These VMs flip between the two every
# few minutes, and many comparisons come out differently in each.
# speed_probe prints "close RTT" or "far RTT" (RTT in us), or "error WHY";
# speed_state only the state, "unknown" where the probe failed.
speed_probe() {
  local np=${1:-2} bench=${2:-build}/apps/tutti-bench out
  out=$(mpirun -np "$np" $(oversubscribe_args "$np") --bind-to none "$bench" --op allreduce \
          --min-bytes 8 --max-bytes 8 --iters 200 --bounds --format csv 2>&1) ||
    { echo "error the round-trip probe failed"; return 0; }
  awk -F, -v far="${FAR_RTT_US:-0.25}" '
    $1 == "collective" { for (i = 1; i <= NF; i++) if ($i == "rtt_us") col = i }
    $1 == "allreduce" && col && $col != "" { rtt = $col + 0; seen = 1 }
    END {
      if (!seen) { print "error no round trip in the probe"; exit }
      printf "%s %.3f\n", (rtt > far ? "far" : "close"), rtt
    }' <<<"$out"
}
speed_state() {
  local state
  read -r state _ <<<"$(speed_probe "$@")"
  [ "$state" = error ] && state=unknown
  echo "$state"
}
