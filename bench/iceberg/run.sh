#!/usr/bin/env bash
# Benchmarks the Iceberg sink against a plain decode + Parquet writer, in one
# run on one disk (issue 7, "Benchmark"):
#
#   bench/iceberg/run.sh                    # 200,000 events per phase
#   RECORDS=1000000 bench/iceberg/run.sh    # scale it
#   RUNS=3 bench/iceberg/run.sh             # 3 interleaved rounds, medians
#
# Environment (defaults in brackets):
#   RECORDS [200000]   change events per phase (~200 bytes each)
#   BATCH [1000]       records per Write
#   COMMIT [100000]    records per Flush, i.e. per Iceberg commit
#   KEYS [50000]       distinct primary keys
#   RUNS [1]           rounds of the three phases, interleaved; medians printed
#   BENCH_DIR [/var/tmp] where the temp dir goes (the disk under test)
set -euo pipefail
export LC_ALL=C

RECORDS=${RECORDS:-200000}
BATCH=${BATCH:-1000}
COMMIT=${COMMIT:-100000}
KEYS=${KEYS:-50000}
RUNS=${RUNS:-1}
BENCH_DIR=${BENCH_DIR:-/var/tmp}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d -p "$BENCH_DIR" icebergbench.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "== building" >&2
(cd "$repo" && go build -o "$work/icebergbench" ./bench/iceberg)
mkdir -p "$work/data"
"$work/icebergbench" -dir "$work/data" -records "$RECORDS" -batch "$BATCH" -commit "$COMMIT" -keys "$KEYS" -runs "$RUNS" "$@"
