#!/usr/bin/env bash
# Benchmarks the mysql source against one throwaway MariaDB server the
# program starts itself (issue 5, "Benchmark"): snapshot rows/s beside a
# plain full-table read by the mariadb client, streaming changes/s beside
# go-mysql's raw BinlogSyncer and mariadb-binlog --read-from-remote-server
# --raw reading the same binlog, and commit-to-log latency at a fixed rate
# through the worker and the embedded log, with CPU-seconds per million
# changes. See README.md.
#
#   bench/mysql/run.sh                              # 1M snapshot rows, 100k txns read 3 times, 5k/s for 20 s
#   ROWS=200000 TXNS=20000 DURATION=10 bench/mysql/run.sh
#   bench/mysql/run.sh -cpuprofile /tmp/mysql.prof  # extra arguments go to the program
#
# Environment (defaults in brackets):
#   ROWS [1000000]   rows of the snapshot table (~200 bytes each)
#   TXNS [100000]    single-row transactions of the streaming phase
#   RUNS [3]         rounds of the streaming phase's four readers (medians)
#   CLIENTS [4]      connections writing the workloads
#   RATE [5000]      transactions/s of the latency phase
#   DURATION [20]    seconds of the latency phase (not SECONDS: bash keeps its own)
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
(cd "$repo" && go build -o "$work/mysqlbench" ./bench/mysql)
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)" >&2
"$work/mysqlbench" -rows "$ROWS" -txns "$TXNS" -clients "$CLIENTS" -rate "$RATE" -seconds "$DURATION" -runs "$RUNS" "$@"
