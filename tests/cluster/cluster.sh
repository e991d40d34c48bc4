#!/usr/bin/env bash
# An emulated multi-node cluster on this one machine, for mpirun tests.
#
# Each node is a network namespace (hn1, hn2, ...) with one veth link
# (vhnN in the root namespace, eth0 inside) on the bridge br78. Addresses
# come only from the private range 10.78.0.0/24: the bridge is 10.78.0.1,
# node N is 10.78.0.(10+N). Nothing else of the machine's network is
# touched (not eth0, not the default route, not resolv.conf, not iptables).
#
# Open MPI starts its daemons on the nodes through an rsh agent written into
# a temporary directory: it enters the node's network namespace, a new UTS
# namespace (the node's hostname) and a new mount namespace, where it binds
# a file holding the node's own boot id over /proc/sys/kernel/random/boot_id.
# The boot id matters: UCX decides that two processes share a machine (and
# may use shared memory between them) by the boot id, not the hostname. In
# container mode (--container) the nodes keep the machine's boot id: MPI
# sees separate nodes while UCX still uses shared memory between them, as
# with containers on one host.
#
# Usage:
#   cluster.sh up SHAPE [--container]   bring the nodes up
#   cluster.sh down                     tear everything down (idempotent)
#   cluster.sh hosts SHAPE              print mpirun's --host argument
#   cluster.sh exec NODE COMMAND...     run a command on a node (hn1, ...)
#   cluster.sh run SHAPE [--container] [--timeout SECS] -- MPIRUN_ARGS...
#       up, mpirun with the cluster's options and MPIRUN_ARGS (the program
#       path must be absolute), down; exits with mpirun's status, 124 when
#       mpirun ran past SECS (default 600), 77 (skip) where the cluster
#       cannot be built (not root, no ip netns).
# SHAPE is ranks per node: NODESxRANKS (2x2, 4x1) or a list (2,1,2).
# Root only. One cluster at a time (the names are fixed).
set -euo pipefail

readonly BRIDGE=br78
readonly BRIDGE_ADDR=10.78.0.1/24
readonly SUBNET=10.78.0.0/24
readonly NODE=hn            # namespaces hn1.., veth ends vhn1..
readonly HOSTS_MARK='# tutti-cluster'
readonly STATE=/run/tutti-cluster.dir   # holds the temporary directory's path
readonly MAX_NODES=32

die() { echo "cluster.sh: $*" >&2; exit 1; }
skip() { echo "cluster.sh: skipped: $*" >&2; exit 77; }

node_addr() { echo "10.78.0.$((10 + $1))"; }

# SHAPE into the ranks per node, in the array ranks: 2x2 -> (2 2),
# 2,1,2 -> (2 1 2).
ranks=()
load_shape() {
  local shape=$1 i
  ranks=()
  if [[ $shape =~ ^([0-9]+)x([0-9]+)$ ]]; then
    local nodes=$((10#${BASH_REMATCH[1]})) per_node=$((10#${BASH_REMATCH[2]}))
    ((nodes <= MAX_NODES)) || die "shape '$shape': 1 to $MAX_NODES nodes"
    for ((i = 0; i < nodes; i++)); do ranks+=("$per_node"); done
  elif [[ $shape =~ ^[0-9]+(,[0-9]+)*$ ]]; then
    IFS=, read -r -a ranks <<<"$shape"
  else
    die "bad shape '$shape' (NODESxRANKS like 2x2, or ranks per node like 2,1,2)"
  fi
  ((${#ranks[@]} >= 1 && ${#ranks[@]} <= MAX_NODES)) || die "shape '$shape': 1 to $MAX_NODES nodes"
  for i in "${ranks[@]}"; do
    ((10#$i >= 1)) || die "shape '$shape': a node without ranks"
  done
}

node_count() { echo "${#ranks[@]}"; }

rank_count() {
  local r total=0
  for r in "${ranks[@]}"; do total=$((total + 10#$r)); done
  echo "$total"
}

# mpirun's --host argument: hn1:2,hn2:2
hosts_arg() {
  local i list=
  for i in "${!ranks[@]}"; do list+="${list:+,}$NODE$((i + 1)):$((10#${ranks[i]}))"; done
  echo "$list"
}

# Our namespaces and veth ends as they are now, whatever made them (so that
# down also cleans up after a run that was killed before its trap ran).
our_netns() { ip netns list 2>/dev/null | awk '{ print $1 }' | grep -E "^${NODE}[0-9]+$" || true; }
our_veths() {
  ip -o link show type veth 2>/dev/null | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' |
    grep -E "^v${NODE}[0-9]+$" || true
}

# Without root or network namespaces there is no cluster: a skip, not a failure.
preflight() {
  [ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces)"
  local tool
  for tool in ip unshare mpirun timeout; do
    command -v "$tool" >/dev/null || skip "no $tool"
  done
  ip netns list >/dev/null 2>&1 || skip "ip netns is unavailable"
}

# The processes left in our namespaces (daemons and ranks of a killed
# mpirun): TERM, a second to go, then KILL. Only ever these processes.
node_pids() {
  local ns
  for ns in $(our_netns); do ip netns pids "$ns" 2>/dev/null || true; done
}

stop_node_processes() {
  local pids
  pids=$(node_pids)
  [ -n "$pids" ] || return 0
  kill -TERM $pids 2>/dev/null || true
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    [ -n "$(node_pids)" ] || return 0
    sleep 0.1
  done
  pids=$(node_pids)
  [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
}

# Everything a previous up made, in the order that leaves nothing behind:
# processes first (a daemon left by a killed mpirun keeps its namespace
# alive), then the veth ends (deleted explicitly: they linger otherwise),
# the namespaces, the bridge, our /etc/hosts lines, the temporary directory.
down() {
  local ns link dir
  stop_node_processes
  for link in $(our_veths); do ip link del "$link" 2>/dev/null || true; done
  for ns in $(our_netns); do ip netns del "$ns" 2>/dev/null || true; done
  ! ip link show "$BRIDGE" >/dev/null 2>&1 || ip link del "$BRIDGE" 2>/dev/null || true
  remove_hosts_lines
  if [ -f "$STATE" ]; then
    dir=$(cat "$STATE")
    # Only a directory that up made (mktemp's pattern), never anything else.
    [[ $dir == /tmp/tutti-cluster.* ]] && rm -rf -- "$dir"
    rm -f "$STATE"
  fi
}

# /etc/hosts is often a bind mount in containers: rewrite it in place
# (cat >) rather than replace it (sed -i renames, which fails there).
remove_hosts_lines() {
  grep -q -- "$HOSTS_MARK\$" /etc/hosts 2>/dev/null || return 0
  local kept; kept=$(grep -v -- "$HOSTS_MARK\$" /etc/hosts || true)
  printf '%s\n' "$kept" >/etc/hosts
}

add_hosts_lines() {
  local n=$1 i
  for ((i = 1; i <= n; i++)); do
    echo "$(node_addr "$i") $NODE$i $HOSTS_MARK"
  done >>/etc/hosts
}

# Where the machine refuses bridges or namespaces (a container without
# CAP_NET_ADMIN, say): run skips, up fails.
unavailable=die

make_bridge() {
  ip link add "$BRIDGE" type bridge 2>/dev/null || "$unavailable" "cannot create a bridge here"
  ip addr add "$BRIDGE_ADDR" dev "$BRIDGE"
  ip link set "$BRIDGE" up
}

# Node i: its namespace, a veth pair from the bridge to its eth0, its address.
make_node() {
  local i=$1 ns=$NODE$1
  ip netns add "$ns" 2>/dev/null || "$unavailable" "cannot create a network namespace here"
  ip link add "v$ns" type veth peer name eth0 netns "$ns"
  ip link set "v$ns" master "$BRIDGE"
  ip link set "v$ns" up
  ip -n "$ns" addr add "$(node_addr "$i")/24" dev eth0
  ip -n "$ns" link set lo up
  ip -n "$ns" link set eth0 up
}

# The rsh agent Open MPI calls as AGENT HOST COMMAND... A node with a
# boot-id file gets that boot id; without one (container mode) it keeps
# the machine's. unshare --mount makes the mount private to the node.
write_agent() {
  local dir=$1
  cat >"$dir/agent" <<EOF
#!/usr/bin/env bash
# Written by tests/cluster/cluster.sh: runs COMMAND on node HOST.
host=\$1; shift
boot_id="$dir/\$host.boot_id"
[ -f "\$boot_id" ] || boot_id=
exec ip netns exec "\$host" unshare --uts --mount bash -c '
  hostname "\$1"
  [ -z "\$2" ] || mount --bind "\$2" /proc/sys/kernel/random/boot_id
  shift 2
  eval "\$*"' agent "\$host" "\$boot_id" "\$@"
EOF
  chmod +x "$dir/agent"
}

# Check that every node answers over the bridge. There is no ping here:
# bash's /dev/tcp to port 9, where nothing listens; a refused connection
# proves the path as well as an accepted one, only a timeout (124) fails.
check_links() {
  local n=$1 i rc
  for ((i = 1; i <= n; i++)); do
    rc=0
    timeout 5 bash -c "exec 3<>/dev/tcp/$(node_addr "$i")/9" 2>/dev/null || rc=$?
    [ "$rc" -ne 124 ] || die "node $NODE$i ($(node_addr "$i")) does not answer"
  done
}

# Checked before any teardown trap is set: a trap would remove the
# cluster that is already up.
refuse_if_up() {
  if [ -n "$(our_netns)" ] || ip link show "$BRIDGE" >/dev/null 2>&1; then
    die "a cluster is already up (cluster.sh down removes it)"
  fi
}

up() {
  local shape=$1 container=$2 n dir i
  load_shape "$shape"
  n=$(node_count)
  dir=$(mktemp -d /tmp/tutti-cluster.XXXXXX)
  echo "$dir" >"$STATE"
  make_bridge
  for ((i = 1; i <= n; i++)); do
    make_node "$i"
    # A distinct boot id per node, unless the nodes are containers.
    [ "$container" = 1 ] || cat /proc/sys/kernel/random/uuid >"$dir/$NODE$i.boot_id"
  done
  add_hosts_lines "$n"
  write_agent "$dir"
  check_links "$n"
}

agent_path() {
  [ -f "$STATE" ] && [ -x "$(cat "$STATE")/agent" ] || die "no cluster is up"
  echo "$(cat "$STATE")/agent"
}

# mpirun from the root namespace (it reaches the daemons over the bridge).
# --bind-to none: each node's daemon would otherwise bind its ranks from
# core 0 up, stacking the ranks of all nodes on the same cores. No tree
# spawn: every daemon is started by mpirun through the agent.
run_mpirun() {
  local limit=$1; shift
  local agent; agent=$(agent_path)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_btl=${OMPI_MCA_btl:-^openib,ofi}
  # In the background and waited for, so that a signal runs the trap at once
  # (bash runs traps only after a foreground command ends).
  timeout -k 10 "$limit" mpirun \
    -np "$(rank_count)" --host "$(hosts_arg)" \
    --mca plm_rsh_agent "$agent" --mca plm_rsh_no_tree_spawn 1 \
    --mca oob_tcp_if_include "$SUBNET" --mca btl_tcp_if_include "$SUBNET" \
    --bind-to none --oversubscribe --mca mpi_yield_when_idle 1 \
    "$@" &
  mpirun_pid=$!
  local rc=0
  wait "$mpirun_pid" || rc=$?
  mpirun_pid=
  [ "$rc" -ne 124 ] || echo "cluster.sh: mpirun ran past ${limit}s and was killed" >&2
  return "$rc"
}

on_signal() {
  [ -z "${mpirun_pid:-}" ] || kill -TERM "$mpirun_pid" 2>/dev/null || true
  exit "$1"   # the EXIT trap tears down
}

cmd_run() {
  local shape=$1; shift
  local container=0 limit=600
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    case $1 in
      --container) container=1 ;;
      --timeout) limit=$2; shift ;;
      *) die "run: unknown option '$1' (mpirun's arguments follow --)" ;;
    esac
    shift
  done
  [ "${1:-}" = -- ] || die "run: expected -- before mpirun's arguments"
  shift
  [[ $limit =~ ^[0-9]+$ ]] || die "run: --timeout takes seconds"
  load_shape "$shape"
  preflight
  unavailable=skip
  refuse_if_up
  mpirun_pid=
  trap down EXIT
  trap 'on_signal 130' INT
  trap 'on_signal 143' TERM
  up "$shape" "$container"
  local rc=0
  run_mpirun "$limit" "$@" || rc=$?
  exit "$rc"
}

usage() { sed -n '/^# Usage:/,/^# Root only/p' "$0" | sed 's/^# \{0,1\}//'; }

main() {
  local cmd=${1:-}; shift || true
  case $cmd in
    up)
      [ $# -ge 1 ] || die "usage: cluster.sh up SHAPE [--container]"
      [ "$(id -u)" -eq 0 ] || die "needs root"
      local container=0
      [ "${2:-}" != --container ] || container=1
      refuse_if_up
      # A half-built cluster is torn down, not left behind.
      trap down EXIT
      trap 'exit 130' INT
      trap 'exit 143' TERM
      up "$1" "$container"
      trap - EXIT INT TERM
      ;;
    down) down ;;
    hosts)
      [ $# -eq 1 ] || die "usage: cluster.sh hosts SHAPE"
      load_shape "$1"
      hosts_arg
      ;;
    exec)
      [ $# -ge 2 ] || die "usage: cluster.sh exec NODE COMMAND..."
      "$(agent_path)" "$@"
      ;;
    run)
      [ $# -ge 1 ] || die "usage: cluster.sh run SHAPE [--container] [--timeout SECS] -- MPIRUN_ARGS..."
      cmd_run "$@"
      ;;
    help | -h | --help) usage ;;
    '') usage >&2; exit 2 ;;
    *) usage >&2; die "unknown command '$cmd'" ;;
  esac
}

main "$@"
