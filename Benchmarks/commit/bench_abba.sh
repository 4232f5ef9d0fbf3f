#!/bin/bash
# bench_abba.sh -- alternates two builds of swiftstore-bench in ABBA order (docs/benchmarks/README.md,
# "Large folios and the commit's writes"), each run preceded and followed by the disk probe
# (disk_probe.c, built by this script) and the load average, so that runs of both builds
# fall in the same minutes and each run's disk phase is known.
#
#   Benchmarks/commit/bench_abba.sh BENCH_A BENCH_B [N] [ROWS] [SCALE_ROWS]
#
# BENCH_A, BENCH_B: the two swiftstore-bench binaries (e.g. main's, built in a worktree of its
# own, and this tree's); N alternations (default 6); ROWS for `--filter ... --reps 5` (default
# commit.durable,notify.latency); SCALE_ROWS, when given, run after them with `--quick`.
set -u
A=$1 B=$2 N=${3:-6} ROWS=${4:-commit.durable,notify.latency} SCALE=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
probe=$(mktemp -d)/disk_probe
cc -O2 -o "$probe" "$here/disk_probe.c" || exit 1
for k in $(seq 1 "$N"); do
    if [ $((k % 2)) = 1 ]; then order="A B"; else order="B A"; fi
    for w in $order; do
        if [ "$w" = A ]; then bin=$A; else bin=$B; fi
        echo "=== run $k $w $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg) $("$probe")"
        "$bin" --filter "$ROWS" --reps 5 2>&1 | grep "^| [a-z]" | grep -v "^| id"
        if [ -n "$SCALE" ]; then "$bin" --filter "$SCALE" --reps 5 --quick 2>&1 | grep "^| [a-z]" | grep -v "^| id"; fi
        echo "--- after: $("$probe")"
    done
done
rm -rf "$(dirname "$probe")"
