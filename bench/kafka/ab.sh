#!/usr/bin/env bash
# A/B of the Kafka listener: the bench program built from this tree, and from
# this tree with PATHS (log/kafka) as they are at git revision BASE, run alternately
# (PAIRS pairs), so both see the same machine load. Prints one line per run
# and the medians: produce ratio, produce CPU-s, consume records/s, consume
# CPU-s. CPU-s (client and listener, one process) is what load disturbs least.
#
#   BASE=HEAD bench/kafka/ab.sh                 # the working tree's log/kafka vs HEAD's
#   BASE=HEAD PARTITIONS=4 PAIRS=7 bench/kafka/ab.sh
#   BASE=main PATHS=log bench/kafka/ab.sh       # the whole log (and listener) vs main's
#
# Environment: BASE [HEAD], PATHS [log/kafka], PAIRS [5], PARTITIONS [1],
# RECORDS [262144], RECORD_BYTES [1024], BENCH_DIR [/var/tmp].
set -euo pipefail
export LC_ALL=C
BASE=${BASE:-HEAD}
PATHS=${PATHS:-log/kafka}
PAIRS=${PAIRS:-5}
export PARTITIONS=${PARTITIONS:-1}
RECORDS=${RECORDS:-262144}
RECORD_BYTES=${RECORD_BYTES:-1024}
BENCH_DIR=${BENCH_DIR:-/var/tmp}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d -p "$BENCH_DIR" kafkaab.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "== building after (this tree) and before ($PATHS at $BASE)" >&2
(cd "$repo" && go build -o "$work/after" ./bench/kafka)
mkdir "$work/tree"
(cd "$repo" && tar --exclude=.git -cf - .) | tar -xf - -C "$work/tree"
for p in $PATHS; do rm -rf "${work:?}/tree/$p"; done
# shellcheck disable=SC2086 # PATHS is a list
(cd "$repo" && git archive "$BASE" $PATHS) | tar -xf - -C "$work/tree"
(cd "$work/tree" && go build -o "$work/before" ./bench/kafka)

run() {
	local out
	out=$("$work/$1" -dir "$work" -records "$RECORDS" -size "$RECORD_BYTES" -partitions "$PARTITIONS" -runs 1 2>&1)
	printf '%s %s %s %s %s %s\n' "$1" "$(cut -d' ' -f1 /proc/loadavg)" \
		"$(awk '/produce \/ in-process =/ { print $NF }' <<<"$out")" \
		"$(awk '/^franz-go produce through/ { print $NF }' <<<"$out")" \
		"$(awk '/^franz-go consume through/ { print $(NF-2) }' <<<"$out")" \
		"$(awk '/^franz-go consume through/ { print $NF }' <<<"$out")"
}
{
	for _ in $(seq "$PAIRS"); do run before; run after; done
} | tee "$work/runs" | awk 'BEGIN { print "which  load  produce/in-process  produce-CPU-s  consume-rec/s  consume-CPU-s" } { print }' >&2
awk '
function median(arr, n,    i, j, t) {
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (arr[j] < arr[i]) { t = arr[i]; arr[i] = arr[j]; arr[j] = t }
	return n % 2 ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2
}
{ n[$1]++; r[$1, n[$1]] = $3; pc[$1, n[$1]] = $4; cr[$1, n[$1]] = $5; cc[$1, n[$1]] = $6 }
END {
	printf "medians of %d pairs (partitions: %s)\n", n["after"], ENVIRON["PARTITIONS"]
	printf "%-8s %20s %15s %15s %15s\n", "", "produce/in-process", "produce CPU-s", "consume rec/s", "consume CPU-s"
	split("before after", which, " ")
	for (w = 1; w <= 2; w++) {
		k = which[w]; m = n[k]
		for (i = 1; i <= m; i++) { a[i] = r[k, i]; b[i] = pc[k, i]; c[i] = cr[k, i]; d[i] = cc[k, i] }
		printf "%-8s %20.2f %15.2f %15.0f %15.2f\n", k, median(a, m), median(b, m), median(c, m), median(d, m)
	}
}' "$work/runs"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
