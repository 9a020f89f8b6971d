#!/usr/bin/env bash
# Benchmarks the webhook sink against a local server that answers 200 at
# once, beside a bare Go HTTP client loop sending the same requests, and
# prints one table (issue 8, "Benchmark"): deliveries/s and p50/p99 delivery
# latency, single and batched.
#
#   bench/webhook/run.sh                     # 100,000 records per phase, 3 rounds
#   RECORDS=1000000 bench/webhook/run.sh     # scale it
#   bench/webhook/run.sh -sign               # extra arguments go to the program
#
# Environment (defaults in brackets):
#   RECORDS [100000]    records per phase and round
#   BATCH [500]         records per Write (the worker's poll batch)
#   ROUNDS [3]          times the phases run, interleaved (the table shows medians)
#   CONCURRENCY [16]    requests in flight
#   BATCH_SIZE [100]    records per request in the batched phases
#   KEYS [1000]         distinct record keys
set -euo pipefail
export LC_ALL=C

RECORDS=${RECORDS:-100000}
BATCH=${BATCH:-500}
CONCURRENCY=${CONCURRENCY:-16}
BATCH_SIZE=${BATCH_SIZE:-100}
KEYS=${KEYS:-1000}
ROUNDS=${ROUNDS:-3}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== building" >&2
(cd "$repo" && go build -o "$work/webhookbench" ./bench/webhook)
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)" >&2
TIMEFORMAT="== whole run: %R s, CPU %U s user + %S s system (%P%% of one CPU)"
time "$work/webhookbench" -records "$RECORDS" -batch "$BATCH" -concurrency "$CONCURRENCY" \
	-batch-size "$BATCH_SIZE" -keys "$KEYS" -rounds "$ROUNDS" "$@"
