#!/usr/bin/env bash
# Benchmarks the Kafka wire listener (log/kafka) with franz-go beside the
# in-process append path, in one run, and prints one table with the targets
# of issue 10 and PASS/MISS:
#   - franz-go produce through the listener (acks=all, idempotent) vs
#     Log.Append of the same records: target >= 0.60
#   - franz-go consume through the listener: target >= 1M records/s
#   - the same franz-go produce against Apache Kafka, when KAFKA_BROKERS is
#     set (there is none on the machines this was written on)
#
#   bench/kafka/run.sh                   # 256 MiB as 1 KiB records, 3 runs
#   PARTITIONS=4 bench/kafka/run.sh      # a topic of 4 partitions
#
# Environment (defaults in brackets):
#   SIZE_MB [256]        payload per step, MiB
#   RECORD_BYTES [1024]  record value size
#   PARTITIONS [1]       partitions of the topic
#   BATCH [1000]         records per Log.Append call (in-process step)
#   INFLIGHT [5]         concurrent appenders (in-process step); 5 x 1000
#                        records is what franz-go keeps in flight
#   FETCH_BYTES [0]      franz-go FetchMaxPartitionBytes (0: its 1 MiB default)
#   RUNS [3]             runs; rows keep the best, the ratio is the median
#   KAFKA_BROKERS []     host:port of a Kafka cluster for the comparison row
#   BENCH_DIR [/var/tmp] where the temp dir goes (the disk under test)
#   CPUPROFILE []        prefix for CPU profiles of the listener steps
set -euo pipefail
export LC_ALL=C

SIZE_MB=${SIZE_MB:-256}
RECORD_BYTES=${RECORD_BYTES:-1024}
PARTITIONS=${PARTITIONS:-1}
BATCH=${BATCH:-1000}
INFLIGHT=${INFLIGHT:-5}
FETCH_BYTES=${FETCH_BYTES:-0}
RUNS=${RUNS:-3}
KAFKA_BROKERS=${KAFKA_BROKERS:-}
BENCH_DIR=${BENCH_DIR:-/var/tmp}
CPUPROFILE=${CPUPROFILE:-}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
records=$((SIZE_MB * 1024 * 1024 / RECORD_BYTES))
work=$(mktemp -d -p "$BENCH_DIR" kafkabench.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "== building" >&2
(cd "$repo" && go build -o "$work/kafkabench" ./bench/kafka)

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
"$work/kafkabench" -dir "$work" -records "$records" -size "$RECORD_BYTES" -partitions "$PARTITIONS" \
	-batch "$BATCH" -inflight "$INFLIGHT" -runs "$RUNS" -fetch-partition-bytes "$FETCH_BYTES" \
	-brokers "$KAFKA_BROKERS" -cpuprofile "$CPUPROFILE"
echo "disk: $(df -PT "$work" | awk 'NR == 2 { print $1 " (" $2 ")" }'); load average before: $load_before, after: $(cut -d' ' -f1-3 /proc/loadavg)"
if (($(awk -v l="${load_before%% *}" -v n="$(nproc)" 'BEGIN { print (l > n / 2) }'))); then
	echo "WARNING: the machine was busy when this started; the figures are unreliable."
fi
