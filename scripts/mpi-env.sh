# Sourced by the scripts: Open MPI settings for this kind of machine.
# Root in containers needs the two ALLOW variables; more ranks than cores
# needs oversubscription, and then ranks must yield instead of spinning.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mpi_yield_when_idle=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# No InfiniBand/libfabric here: keep Open MPI from probing (and warning).
export OMPI_MCA_btl=${OMPI_MCA_btl:-^openib,ofi}
