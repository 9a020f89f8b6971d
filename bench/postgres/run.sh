#!/usr/bin/env bash
# Benchmarks the postgres source against one throwaway PostgreSQL server the
# program starts itself (issue 4, "Benchmark"): snapshot rows/s beside COPY,
# streaming changes/s beside pg_recvlogical (same protocol options), and
# commit-to-log latency at a fixed rate through the worker and the embedded
# log, with CPU-seconds per million changes. See README.md.
#
#   bench/postgres/run.sh                        # 1M snapshot rows, 100k txns, 3 runs, 5k/s for 20 s
#   ROWS=200000 TXNS=20000 RUNS=1 DURATION=10 bench/postgres/run.sh
#   bench/postgres/run.sh -cpuprofile /tmp/p     # extra arguments go to the program
#
# Environment (defaults in brackets):
#   ROWS [1000000]   rows of the snapshot table (~200 bytes each)
#   TXNS [100000]    single-row transactions of the streaming phase
#   RUNS [3]         interleaved runs of the snapshot and streaming phases (medians reported)
#   CLIENTS [4]      connections writing the workloads
#   RATE [5000]      transactions/s of the latency phase (pgbench -R)
#   DURATION [20]    seconds of the latency phase (not SECONDS: bash owns that name)
set -euo pipefail
export LC_ALL=C

ROWS=${ROWS:-1000000}
TXNS=${TXNS:-100000}
RUNS=${RUNS:-3}
CLIENTS=${CLIENTS:-4}
RATE=${RATE:-5000}
DURATION=${DURATION:-20}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== building" >&2
(cd "$repo" && go build -o "$work/pgbench" ./bench/postgres)
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)" >&2
"$work/pgbench" -rows "$ROWS" -txns "$TXNS" -runs "$RUNS" -clients "$CLIENTS" -rate "$RATE" -seconds "$DURATION" "$@"
