#!/usr/bin/env bash
# Benchmarks the worker end to end against the log it runs on, all in one
# run on one filesystem, and prints one table (issue 3, "Benchmark"):
#   - the log's own durable append throughput (1 KiB records, fsync per ack),
#   - generator → log → file sink at full speed through the engine, and its
#     ratio to the log's throughput (target >= 50%),
#   - event-to-sink latency p50/p99 at a fixed 10,000 events/s (target p99
#     < 50 ms), beside the disk's own flush times in the same seconds (a probe
#     appends 4 KiB and fdatasyncs every 10 ms beside the log: on a shared
#     virtual disk, flushes that stall for 100 ms and more set the p99).
#
#   bench/engine/run.sh                    # 3 rounds of 1,000,000 records, 10 s at 10k/s
#   RECORDS=5000000 bench/engine/run.sh    # scale it
#   RUNS=1 bench/engine/run.sh -phases latency -cpuprofile /tmp/cpu.prof
#                                          # extra arguments go to the program
#   GOGC=400 bench/engine/run.sh           # the Go runtime's variables pass through
#
# A warm-up round of the append and end-to-end phases runs first and is not
# counted (-warmup N to change): the first phase of a process pays for a heap
# the VM's host has not backed yet. Each phase's figures print as it ends.
#
# Before each latency phase the run waits until the disk has been quiet for
# 5 s (no probe flush of 20 ms or more; at most 60 s, and it says how long):
# after the throughput phases wrote their gigabytes, this VM's disk stalled
# for about 15 s, which the latency phase right after measured as the
# pipeline's p99 (229 ms against 23 ms once settled).
#
# The phases run in rounds (append, e2e, latency, then again), so that a slow
# spell of the shared disk hits every phase alike; the table shows the median
# of the rounds with the spread (min–max). The ratio is taken per round, each
# end-to-end run over the append run just before it.
#
# Environment (defaults in brackets):
#   RUNS [3]             rounds of every phase
#   RECORDS [1000000]    records of the append and end-to-end phases (the end to end
#                        is timed to the sink's last group commit, which follows its
#                        last write after 20 ms or twice the gap between its last two
#                        batches: fewer records would overstate that tail)
#   RECORD_BYTES [1024]  record value size (the generator's value.size)
#   BATCH [500]          records per Append call of the log append phase
#   GEN_BATCH [500]      the generator's batch.size (its default), end to end and latency
#   INFLIGHT [8]         concurrent appenders in the log append phase
#   PARTITIONS [3]       partitions of web.tracking (and of the append topic)
#   RATE [10000]         events per second of the latency phase
#   DURATION [10s]       length of the latency phase
#   BENCH_DIR [/var/tmp] where the temp dir goes (the disk under test)
#   SINK_DIR []          also run the end to end with the file sink's file in this
#                        directory, off the log's disk (another disk); empty: don't.
#                        On this VM a tmpfs (/dev/shm) was no faster than the log's
#                        disk (2026-11-29, session 6): the end to end is CPU-bound,
#                        and tmpfs pages are always fresh ones
set -euo pipefail
export LC_ALL=C

RUNS=${RUNS:-3}
RECORDS=${RECORDS:-1000000}
RECORD_BYTES=${RECORD_BYTES:-1024}
BATCH=${BATCH:-500}
GEN_BATCH=${GEN_BATCH:-500}
INFLIGHT=${INFLIGHT:-8}
PARTITIONS=${PARTITIONS:-3}
RATE=${RATE:-10000}
DURATION=${DURATION:-10s}
BENCH_DIR=${BENCH_DIR:-/var/tmp}
SINK_DIR=${SINK_DIR:-}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d -p "$BENCH_DIR" enginebench.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "== building" >&2
(cd "$repo" && go build -o "$work/enginebench" ./bench/engine)

echo "== in $work on $(df -P "$work" | awk 'NR == 2 { print $1 }') ($(df -PT "$work" | awk 'NR == 2 { print $2 }'))" >&2
TIMEFORMAT="== whole run: %R s, CPU %U s user + %S s system (%P%% of one CPU)"
time "$work/enginebench" -dir "$work/data" \
	-records "$RECORDS" -size "$RECORD_BYTES" -batch "$BATCH" -gen-batch "$GEN_BATCH" -inflight "$INFLIGHT" \
	-partitions "$PARTITIONS" -rate "$RATE" -duration "$DURATION" -runs "$RUNS" \
	${SINK_DIR:+-sink-dir "$SINK_DIR"} "$@"
