#!/usr/bin/env bash
# Benchmarks the httptrack source (issue 6, "Benchmark") and prints one
# table: single-event POST /v1/track and POST /v1/batch of 100 events, both
# durable (through the engine on the embedded log, fsync before every 200),
# beside a bare net/http handler that reads the body and answers 200 (the
# limit), and the source alone (src-*: straight to its ServeHTTP, no
# network, no log). Events/s, p50/p99 latency, process CPU per request, and
# the ratios against the bare handler of the same run.
#
#   bench/httptrack/run.sh                           # 3 interleaved rounds of 4 s per phase
#   ROUNDS=1 DURATION=10s bench/httptrack/run.sh
#   bench/httptrack/run.sh -phases single -cpuprofile /tmp/cpu.prof
#                                                    # extra arguments go to the program
#
# The phases run in rounds (bare and single at each client count, batch,
# src-single, src-batch, then again), so that a slow spell of the shared
# machine hits every phase alike;
# each phase's rounds are added up.
#
# Environment (defaults in brackets):
#   ROUNDS (or RUNS) [3] rounds of every phase; the table adds them up, and
#                       the medians of the per-round figures follow it
#   DURATION [4s]       length of each phase in each round
#   CONNS [16,32,64,128,256]
#                       clients (keep-alive connections) of bare and single: each
#                       runs at every count, and the verdict compares single's
#                       best requests/s with bare's best (each phase at the
#                       client count that suits it), beside the ratio at each
#                       count. A single count (CONNS=64) compares the two there.
#   BATCH_CONNS [32]    clients of batch
#   PHASES [bare,single,batch,src-single,src-batch]
set -euo pipefail
export LC_ALL=C

ROUNDS=${ROUNDS:-${RUNS:-3}}
DURATION=${DURATION:-4s}
CONNS=${CONNS:-16,32,64,128,256}
BATCH_CONNS=${BATCH_CONNS:-32}
PHASES=${PHASES:-bare,single,batch,src-single,src-batch}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== building" >&2
(cd "$repo" && go build -o "$work/httptrackbench" ./bench/httptrack)
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)" >&2
TIMEFORMAT="== whole run: %R s, CPU %U s user + %S s system (%P%% of one CPU)"
time "$work/httptrackbench" -rounds "$ROUNDS" -duration "$DURATION" -conns "$CONNS" \
	-batch-conns "$BATCH_CONNS" -phases "$PHASES" "$@"
