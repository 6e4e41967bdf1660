#!/usr/bin/env bash
set -euo pipefail
# The storage gate: writes MIB MiB to FILE on the shared volume (synced to the storage), reads it
# back with direct I/O, and prints MB/s next to the storage's aggregate throughput, EXPECTED_MBPS.
# A plain read right after the write would come from this node's page cache at memory speed; a
# volume that refuses O_DIRECT is read normally and the figure says so. It fails only on an I/O
# error (named, with the exit status EXIT_VOLUME): one node's figure is a sample, not the
# aggregate. PREFIX starts the result line.
trap 'echo "$PREFIX FAILED: shared volume: I/O error at line $LINENO on $FILE (the lines above say which)" >&2; exit "$EXIT_VOLUME"' ERR
t0=$(date +%s.%N)
dd if=/dev/zero of="$FILE" bs=1M count="$MIB" conv=fsync status=none
t1=$(date +%s.%N)
read_as="read"
if ! dd if="$FILE" of=/dev/null bs=1M iflag=direct status=none 2>/dev/null; then
  read_as="read (page cache: the volume refuses direct I/O)"
  t1=$(date +%s.%N)
  dd if="$FILE" of=/dev/null bs=1M status=none
fi
t2=$(date +%s.%N)
rm -f "$FILE"
awk -v mib="$MIB" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v prefix="$PREFIX" -v expected="$EXPECTED_MBPS" -v read_as="$read_as" 'BEGIN {
  printf "%s shared volume from one GPU node: write %.0f MB/s, %s %.0f MB/s (the storage aggregate: %d MB/s)\n",
    prefix, mib * 1.048576 / (t1 - t0), read_as, mib * 1.048576 / (t2 - t1), expected
}'
