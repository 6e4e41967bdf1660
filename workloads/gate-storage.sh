#!/usr/bin/env bash
# The storage gate: writes MIB MiB to FILE on the shared volume (synced to the storage), reads it
# back, and prints MB/s next to the storage's aggregate throughput, EXPECTED_MBPS. It fails only
# on an I/O error: one node's figure is a sample, not the aggregate. PREFIX starts the result
# line.
set -euo pipefail
t0=$(date +%s.%N)
dd if=/dev/zero of="$FILE" bs=1M count="$MIB" conv=fsync status=none
t1=$(date +%s.%N)
dd if="$FILE" of=/dev/null bs=1M status=none
t2=$(date +%s.%N)
rm -f "$FILE"
awk -v mib="$MIB" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v prefix="$PREFIX" -v expected="$EXPECTED_MBPS" 'BEGIN {
  printf "%s shared volume from one GPU node: write %.0f MB/s, read %.0f MB/s (the storage aggregate: %d MB/s)\n",
    prefix, mib * 1.048576 / (t1 - t0), mib * 1.048576 / (t2 - t1), expected
}'
