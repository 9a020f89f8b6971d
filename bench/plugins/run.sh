#!/usr/bin/env bash
# Benchmarks the plugin boundary (issue 9, "Benchmark"): records/s through
# the example counter source and jsonl sink of examples/plugins run as
# plugins, beside the same connector code compiled in (the limit), for
# 1 KiB records. Target: a plugin at least 50% of the built-in records/s.
#
#   bench/plugins/run.sh                       # 3 rounds of 200,000 records
#   RECORDS=1000000 bench/plugins/run.sh       # scale it
#   BENCH_DIR=/dev/shm bench/plugins/run.sh    # fsyncs on tmpfs: the boundary's CPU cost alone
#   RUNS=1 bench/plugins/run.sh -phases source # extra arguments go to the program
#
# Environment (defaults in brackets):
#   RUNS [3]             rounds of every measurement
#   RECORDS [200000]     records per measurement
#   RECORD_BYTES [1024]  bytes of each record value
#   BATCH [1000]         records per sink Write
#   BENCH_DIR [/var/tmp] where the temp dir goes (the plugins, the sink's
#                        files, the pipeline's log): the disk under test
set -euo pipefail
export LC_ALL=C

RUNS=${RUNS:-3}
RECORDS=${RECORDS:-200000}
RECORD_BYTES=${RECORD_BYTES:-1024}
BATCH=${BATCH:-1000}
BENCH_DIR=${BENCH_DIR:-/var/tmp}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=$(mktemp -d -p "$BENCH_DIR" pluginbench.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "== building the plugins and the benchmark" >&2
# Each is a module of its own (bench/plugins imports the examples'
# connector packages to build them in); GOWORK=off so that a go.work
# elsewhere does not interfere.
export GOWORK=off
(cd "$repo/examples/plugins/counter" && go build -o "$work/plugins/counter" .)
(cd "$repo/examples/plugins/jsonl" && go build -o "$work/plugins/jsonl" .)
(cd "$here" && go build -o "$work/pluginbench" .)

echo "== in $work on $(df -P "$work" | awk 'NR == 2 { print $1 }') ($(df -PT "$work" | awk 'NR == 2 { print $2 }'))" >&2
TIMEFORMAT="== whole run: %R s, CPU %U s user + %S s system (%P%% of one CPU)"
time "$work/pluginbench" -plugins "$work/plugins" -dir "$work" \
	-records "$RECORDS" -size "$RECORD_BYTES" -batch "$BATCH" -runs "$RUNS" "$@"
