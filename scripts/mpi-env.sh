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
