#!/usr/bin/env bash
set -euo pipefail
# The NCCL gate's pod, one per GPU node (an Indexed Job in the gIB diagnostic image). Every pod
# checks its node's GPUs and RDMA NICs; with two nodes or more, index 0 collects the other nodes'
# results, runs NCCL's all_gather across all the pods with the gIB plugin over the RDMA NICs and
# fails when the bus bandwidth at the largest message size is below the minimum (naming the node
# that is slow with both its neighbours, when there are three nodes or more), while the other pods
# serve MPI over ssh until index 0 is done (the Job's success policy then stops them). On one
# node, all_gather runs between the node's GPUs over its NICs alone and must use gIB.
#
# The gate uses the largest messages' bus bandwidth, not NCCL's "Avg bus bandwidth": that average
# over 1 KB to 8 GB is dominated by small, latency-bound messages (a healthy A4 pair averages 59
# GB/s while reaching 260 GB/s from 2 GB up: testdata/recorded/nccl-all_gather-a4-gib-2node.txt).
#
# Environment: GPUS (what the node must show), RDMA_INTERFACES (the pod's RDMA NICs, e.g. eth2 ...
# eth9, from its networking.gke.io/interfaces annotation), HOSTS (the pods' host names, index 0 first),
# MIN_BUS_BANDWIDTH_GBPS, PREFIX (starts every result line), ONE_NODE_NCCL_ENV (NCCL's
# variables that keep a one-node all_gather on the NICs); ATTEMPTS and RETRY_SECONDS bound the
# wait for the peers' sshd (as long as a peer's pod may wait for its node); EXIT_NO_CAPACITY,
# EXIT_GPU_HEALTH, EXIT_RDMA_NICS and EXIT_NCCL are the exit statuses of each cause, which the
# Job's failure names; JOB_COMPLETION_INDEX comes from the Job.

smi=/usr/local/nvidia/bin/nvidia-smi
# One line a GPU: index, name, driver, ECC mode, uncorrected volatile ECC errors (as recorded in
# testdata/recorded/nvidia-smi-h200.txt).
gpu_lines=$("$smi" --query-gpu=index,name,driver_version,ecc.mode.current,ecc.errors.uncorrected.volatile.total --format=csv,noheader)
count=$(grep -c . <<<"$gpu_lines" || true)
ecc=$(awk -F', *' '{ s += $5 } END { print s + 0 }' <<<"$gpu_lines")
health="$PREFIX GPU health on $(hostname): $count GPUs, $ecc uncorrected ECC errors"
echo "$health"
if [[ $count -ne $GPUS || $ecc -ne 0 ]]; then
  echo "$PREFIX FAILED: GPU health on $(hostname)" >&2
  exit "$EXIT_GPU_HEALTH"
fi
# Every RDMA NIC the pod was given must be there and up (the kernel's operstate: "up", or
# "unknown" for a driver that does not report it); a NIC that is down or absent would make NCCL
# use fewer rails, or fail, on this node only.
sysfs=${SYSFS_NET:-/sys/class/net}
read -ra nics <<<"${RDMA_INTERFACES:-}"
bad=()
for nic in "${nics[@]}"; do
  state=$(cat "$sysfs/$nic/operstate" 2>/dev/null || echo absent)
  case $state in
  up | unknown) ;;
  *) bad+=("$nic $state") ;;
  esac
done
rdma="$PREFIX RDMA NICs on $(hostname): $((${#nics[@]} - ${#bad[@]})) of ${#nics[@]} up"
echo "$rdma"
if ((${#bad[@]} > 0)); then
  echo "$PREFIX FAILED: RDMA NICs on $(hostname): $(IFS=,; echo "${bad[*]}")" >&2
  exit "$EXIT_RDMA_NICS"
fi
# Index 0 reads this over ssh: the Job's success policy removes the other pods, and their logs,
# before the results are collected.
printf '%s\n%s\n' "$health" "$rdma" >/tmp/gate-health

read -ra peers <<<"$HOSTS"
/scripts/container_entry.sh shell
# The gIB image's script is written for shells without `set -u` (the upstream manifests source it
# from a plain shell, container-engine-accelerators gpudirect-rdma/nccl-test*.yaml): an unset
# variable it reads must not end the gate.
set +u
# shellcheck source=/dev/null
source /usr/local/gib/scripts/set_nccl_env.sh
set -u
if [[ $JOB_COMPLETION_INDEX != 0 ]]; then
  exec sleep infinity
fi
if ((${#peers[@]} < 2)); then
  # One node: all_gather between its own GPUs with NVLink, peer-to-peer and shared memory off
  # (ONE_NODE_NCCL_ENV), so that every byte goes out of one RDMA NIC and back in through
  # another: the node's RDMA path is tested before the run needs it. mpirun forwards the
  # variables to its ranks through mca_base_env_list (Open MPI's mpirun(1), -x).
  where="on one node over its RDMA NICs"
  read -ra one_node_env <<<"$ONE_NODE_NCCL_ENV"
  export "${one_node_env[@]}"
  names=("${one_node_env[@]%%=*}")
  OMPI_MCA_mca_base_env_list=$(IFS=';'; echo "${names[*]}")
  export OMPI_MCA_mca_base_env_list
else
  where="over ${#peers[@]} nodes"
  # A pod resolves in DNS before its GPU check has finished and its sshd has started: wait, for
  # a bounded time, until every peer's sshd (port 222) answers, as container-engine-accelerators'
  # gpudirect-rdma/nccl-test-a4x-max-jobset.yaml does.
  for host in "${peers[@]}"; do
    for ((attempt = 1; ; attempt++)); do
      if ssh -p 222 -o StrictHostKeyChecking=no -o ConnectTimeout=5 "$host" true 2>/dev/null; then
        break
      fi
      if ((attempt >= ATTEMPTS)); then
        # The headless Service names a pod once it has an address, which it gets on its node:
        # no address means the pod is still waiting for a GPU node.
        if ! getent hosts "$host" >/dev/null; then
          echo "$PREFIX FAILED: no capacity: ${host%%.*} has no GPU node after $((attempt * RETRY_SECONDS))s (its pod is not scheduled: spot or flex-start capacity, or the pool's scale-up; gate.capacityWaitMinutes)" >&2
          exit "$EXIT_NO_CAPACITY"
        fi
        echo "$PREFIX FAILED: ${host%%.*} did not answer over ssh after $attempt attempts: its pod is on its node but its image pull or its GPU or NIC check failed (its log says which)" >&2
        exit "$EXIT_NCCL"
      fi
      echo "waiting for $host's sshd ($attempt)"
      sleep "$RETRY_SECONDS"
    done
  done
  for host in "${peers[@]:1}"; do
    ssh -p 222 -o StrictHostKeyChecking=no -o ConnectTimeout=5 "$host" cat /tmp/gate-health ||
      echo "$PREFIX no GPU health result from $host"
  done
fi
nccl_status=0
/usr/local/gib/scripts/run_nccl_tests.sh -t all_gather -b 1K -e 8G "${peers[@]}" | tee /tmp/nccl.log || nccl_status=${PIPESTATUS[0]}
if ((nccl_status != 0)); then
  # mpirun's status: 1 when it cannot start the ranks (a host it cannot reach), 134 when NCCL
  # aborts (SIGABRT), e.g. on a NIC or transport error.
  echo "$PREFIX FAILED: NCCL all_gather $where exited with status $nccl_status (1: mpirun could not start on every node; 134: NCCL aborted); the lines above say why" >&2
  exit "$EXIT_NCCL"
fi
# NCCL names its transport once per communicator with NCCL_DEBUG=INFO (INIT,NET): "Using network
# gIB" when the gIB plugin carries it (docs.cloud.google.com/ai-hypercomputer/docs/nccl/test-vms),
# "Using network Socket" over TCP. On one node only the NICs are left: gIB must be the network.
if ((${#peers[@]} < 2)) && ! grep -q 'NCCL INFO Using network gIB' /tmp/nccl.log; then
  echo "$PREFIX FAILED: NCCL all_gather $where did not use the gIB plugin (no \"NCCL INFO Using network gIB\" line; $(grep -o 'NCCL INFO Using network [A-Za-z]*' /tmp/nccl.log | sort -u | paste -sd, - || true)): check the RDMA installer DaemonSet and the rdma-* Network objects" >&2
  exit "$EXIT_NCCL"
fi
# The result table's rows: size (B), count, type, redop, root, then out-of-place time, algbw,
# busbw (GB/s), #wrong, and the same in place, each line perhaps behind mpirun's
# `[rank,stream]<stdout>:` tag. The bus bandwidth of the out-of-place run at the largest size is
# what the gate compares; the rows from 1 GiB up are printed with it.
# shellcheck disable=SC2016 # an awk program: its $ are awk's
table='{ sub(/^\[[0-9]+,[0-9]+\]<std(out|err)>:/, "") } $1 ~ /^[0-9]+$/ && NF >= 13 && $8 ~ /^[0-9.]+$/'
rows=$(awk "$table"' { print $1, $8 }' /tmp/nccl.log)
sizes=$(awk '$1 >= 1073741824 { printf "%s%.0f MiB %s GB/s", sep, $1 / 1048576, $2; sep = ", " }' <<<"$rows")
read -r largest bw < <(tail -n 1 <<<"$rows") || true
echo "$PREFIX NCCL all_gather $where: bus bandwidth ${bw:-none} GB/s at ${largest:-no} B (minimum $MIN_BUS_BANDWIDTH_GBPS); from 1 GiB: ${sizes:-none}"
if awk -v bw="${bw:-0}" -v min="$MIN_BUS_BANDWIDTH_GBPS" 'BEGIN { exit !(bw >= min) }'; then
  exit 0
fi
# NCCL names its transport once per communicator with NCCL_DEBUG=INFO (INIT,NET).
if grep -q 'NCCL INFO Using network Socket' /tmp/nccl.log; then
  echo "$PREFIX FAILED: NCCL is below the minimum and ran over TCP sockets (NCCL INFO Using network Socket), not the RDMA NICs: check the RDMA installer DaemonSet and the rdma-* Network objects" >&2
  exit "$EXIT_NCCL"
fi
# Which node? With three nodes or more, all_gather runs again on each pair of neighbours in a ring
# (1 GiB messages): a node whose two pairs are both below the minimum is named. With two nodes
# the pair is the whole test. The pairs run in rounds of disjoint pairs, in parallel: pair i in
# round i % 2, and with an odd count the pair that closes the ring in a third round (it shares a
# node with the first pair of round 0 and the last of round 1), so that 64 nodes take two
# mpirun runs' time, not 64.
if ((${#peers[@]} > 2)); then
  n=${#peers[@]}
  slow=()
  for round in 0 1 2; do
    pairs=()
    for ((i = 0; i < n; i++)); do
      r=$((i % 2))
      if ((n % 2 == 1 && i == n - 1)); then
        r=2
      fi
      if ((r == round)); then
        pairs+=("$i")
      fi
    done
    for i in "${pairs[@]}"; do
      /usr/local/gib/scripts/run_nccl_tests.sh -t all_gather -b 1G -e 1G "${peers[i]}" "${peers[(i + 1) % n]}" >"/tmp/nccl-pair-$i.log" 2>&1 &
    done
    wait
    for i in "${pairs[@]}"; do
      a=${peers[i]}
      b=${peers[(i + 1) % n]}
      pair_bw=$(awk "$table"' { v = $8 } END { print v }' "/tmp/nccl-pair-$i.log")
      echo "$PREFIX NCCL all_gather between ${a%%.*} and ${b%%.*}: bus bandwidth ${pair_bw:-none} GB/s"
      if ! awk -v bw="${pair_bw:-0}" -v min="$MIN_BUS_BANDWIDTH_GBPS" 'BEGIN { exit !(bw >= min) }'; then
        slow+=("${a%%.*}" "${b%%.*}")
      fi
    done
  done
  suspects=$(printf '%s\n' "${slow[@]}" | sort | uniq -d | paste -sd, -)
  if ((${#slow[@]} == 2 * ${#peers[@]})); then
    # Every pair is slow: that is the fabric (or NCCL's transport), not every node at once.
    echo "$PREFIX FAILED: NCCL is below the minimum between every pair of nodes: the fabric or the transport, not a node; check the RDMA installer DaemonSet, the rdma-* Network objects and the NET/ lines of this log" >&2
    exit "$EXIT_NCCL"
  fi
  if [[ -n $suspects ]]; then
    echo "$PREFIX FAILED: NCCL is below the minimum; slow in both of its pairs: $suspects (drain it and let GKE repair it)" >&2
    exit "$EXIT_NCCL"
  fi
fi
echo "$PREFIX FAILED: NCCL is below the minimum; is it on RDMA? grep NET/ in this log" >&2
exit "$EXIT_NCCL"
