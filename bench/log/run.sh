#!/usr/bin/env bash
# Benchmarks the partition log against the raw disk (dd) and NATS JetStream,
# all on one filesystem, and prints one table (issue 2, "Benchmarks").
#
#   bench/log/run.sh                # 512 MiB as 1 KiB records
#   SIZE_MB=1024 bench/log/run.sh   # scale it
#
# Environment (defaults in brackets):
#   SIZE_MB [512]        payload per run, MiB; every row moves the same bytes
#   RECORD_BYTES [1024]  record value size
#   BATCH [1000]         records per Append call (API rows)
#   INFLIGHT [8]         concurrent appenders (API rows)
#   FLUSH_INTERVAL [1s]  FlushInterval of the "no fsync per ack" API row
#   JS_WINDOW [1024]     unacknowledged JetStream publishes in flight
#   NATS_URL [nats://127.0.0.1:4222]  started here when nothing listens
#   BENCH_DIR [/var/tmp] where the temp dir goes (the disk under test)
#   RUNS [1]             run every row N times and keep the best (dd rows: see DD_RUNS)
#   DD_RUNS [3]          dd runs of each form per round, after one warm-up run of each
#                        at the start; the dd rows are the median of all RUNS x DD_RUNS
#                        runs (each printed), and every ratio divides by that median
#   DROP_CACHES [0]      1: `sync; echo 3 > /proc/sys/vm/drop_caches` before every dd
#                        run (needs root; it empties the page cache of the whole
#                        machine, which other work on it pays for)
#
# Rates count payload bytes in MB of 10^6 bytes, as dd does.
set -euo pipefail
export LC_ALL=C

SIZE_MB=${SIZE_MB:-512}
RECORD_BYTES=${RECORD_BYTES:-1024}
BATCH=${BATCH:-1000}
INFLIGHT=${INFLIGHT:-8}
FLUSH_INTERVAL=${FLUSH_INTERVAL:-1s}
JS_WINDOW=${JS_WINDOW:-1024}
NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
BENCH_DIR=${BENCH_DIR:-/var/tmp}
RUNS=${RUNS:-1}
DD_RUNS=${DD_RUNS:-3}
DROP_CACHES=${DROP_CACHES:-0}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
records=$((SIZE_MB * 1024 * 1024 / RECORD_BYTES))
work=$(mktemp -d -p "$BENCH_DIR" logbench.XXXXXX)
nats_pid=""

cleanup() {
	if [[ -n $nats_pid ]]; then
		kill "$nats_pid" 2>/dev/null || true
		wait "$nats_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

say() { printf '%s\n' "$*" >&2; }
now() { date +%s.%N; }
# jget JSON KEY prints the value of a number or string field of a flat JSON object.
jget() { sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p" <<<"$1"; }
calc() { awk "BEGIN { printf \"%.6g\", $1 }"; }

# Results by row: payload bytes, records and seconds of the best run.
declare -A BYTES RECS SECS NOTE
kept=0 # whether the last record call kept its figures as the best
record() { # id bytes records seconds
	local id=$1 b=$2 r=$3 s=$4
	kept=0
	if [[ -z ${SECS[$id]:-} ]] || (($(awk "BEGIN { print ($b / $s > ${BYTES[$id]} / ${SECS[$id]}) }"))); then
		BYTES[$id]=$b RECS[$id]=$r SECS[$id]=$s kept=1
	fi
}
# settle waits until the files written and deleted so far have reached the
# disk (with -o discard, deletions cost the disk time too), so that no step
# pays for the one before.
settle() { sync; }
mbps() { calc "${BYTES[$1]} / 1e6 / ${SECS[$1]}"; }
rps() { calc "${RECS[$1]} / ${SECS[$1]}"; }

say "== building"
(cd "$repo" && go build -o "$work/logbench" ./bench/log)
tributary="" produce_skipped=""
if ! compgen -G "$repo/cmd/tributary/*.go" >/dev/null; then
	produce_skipped="cmd/tributary does not exist"
elif ! (cd "$repo" && go build -o "$work/tributary" ./cmd/tributary); then
	produce_skipped="cmd/tributary does not build"
else
	tributary=$work/tributary
fi
[[ -z $produce_skipped ]] || say "skipping the tributary produce row: $produce_skipped"

# dd runs: "MB/s seconds bytes" per run, by row; the row keeps the median.
declare -A DD_SAMPLES
drop_caches() {
	((DROP_CACHES)) || return 0
	sync
	if ! echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then
		say "DROP_CACHES=1 but /proc/sys/vm/drop_caches is not writable here"
		exit 1
	fi
}

run_dd() { # id dd-flag [warmup]
	local out b s
	drop_caches
	out=$(dd if=/dev/zero of="$work/dd.bin" bs=1M count="$SIZE_MB" "$2" 2>&1)
	rm -f "$work/dd.bin"
	read -r b s < <(sed -n 's/^\([0-9]*\) bytes.* copied, \([0-9.e+-]*\) s,.*/\1 \2/p' <<<"$out")
	[[ -n ${s:-} ]] || {
		say "cannot parse dd output: $out"
		exit 1
	}
	local rate
	rate=$(calc "$b / 1e6 / $s")
	if [[ ${3:-} == warmup ]]; then
		say "   dd $2 (warm-up, not counted): $(printf '%.1f' "$rate") MB/s in $s s"
		return 0
	fi
	say "   dd $2: $(printf '%.1f' "$rate") MB/s in $s s"
	DD_SAMPLES[$1]+="$rate $s $b"$'\n'
}

# dd_median sets row id to its median dd run (the lower middle one of an
# even count) and notes every run's MB/s.
dd_median() { # id
	local sorted n mid rate s b
	sorted=$(sort -g <<<"${DD_SAMPLES[$1]%$'\n'}")
	n=$(wc -l <<<"$sorted")
	mid=$(((n + 1) / 2))
	read -r rate s b < <(sed -n "${mid}p" <<<"$sorted")
	BYTES[$1]=$b RECS[$1]=$((b / RECORD_BYTES)) SECS[$1]=$s
	NOTE[$1]="median of $n runs: $(awk '{ printf "%s%.0f", (NR > 1 ? ", " : ""), $1 }' <<<"$sorted") MB/s"
}

run_append() { # id dir [extra logbench flags]
	local id=$1 dir=$2 out
	shift 2
	out=$("$work/logbench" -mode append -dir "$dir" -records "$records" -size "$RECORD_BYTES" \
		-batch "$BATCH" -inflight "$INFLIGHT" "$@")
	say "   $out"
	record "$id" "$(jget "$out" bytes)" "$(jget "$out" records)" "$(jget "$out" seconds)"
	((kept)) || return 0
	NOTE[$id]="$(printf '%.1f' "$(jget "$out" cpu_seconds)") CPU-s in the process"
	if [[ $(jget "$out" fsyncs) != "" ]]; then
		NOTE[$id]+=", $(jget "$out" fsyncs) fsyncs of $(printf '%.1f' "$(jget "$out" fsync_avg_us)") us avg, $(printf '%.0f' "$(jget "$out" records_per_fsync)") records each"
	fi
}

run_read() { # dir
	local out
	out=$("$work/logbench" -mode read -dir "$1")
	say "   $out"
	if [[ $(jget "$out" records) != "$records" ]]; then
		say "read $(jget "$out" records) records, want $records"
		exit 1
	fi
	record read "$(jget "$out" bytes)" "$(jget "$out" records)" "$(jget "$out" seconds)"
}

run_produce() { # dir
	local t0 t1 out
	t0=$(now)
	"$tributary" --data-dir "$1" produce bench -p 0 <"$work/records.txt" 2>"$work/produce.err"
	t1=$(now)
	say "   $(tail -n 1 "$work/produce.err")"
	# Check what landed (and that it is readable) before counting it.
	out=$("$work/logbench" -mode read -dir "$1")
	if [[ $(jget "$out" records) != "$records" ]]; then
		say "tributary produce stored $(jget "$out" records) records, want $records"
		exit 1
	fi
	record produce "$((records * RECORD_BYTES))" "$records" "$(calc "$t1 - $t0")"
}

nats_hostport=${NATS_URL#*://}
nats_host=${nats_hostport%:*}
nats_port=${nats_hostport##*:}
nats_listening() { (exec 3<>"/dev/tcp/$nats_host/$nats_port") 2>/dev/null; }

# nats_store_fs names the filesystem of the JetStream store dir, when known.
nats_store_fs() {
	local dir="" pid
	if [[ -n $nats_pid ]]; then
		dir=$work/nats
	elif pid=$(pgrep -x nats-server | head -n 1); then
		dir=$(tr '\0' '\n' <"/proc/$pid/cmdline" | sed -n '/^-sd$\|^--store_dir$/{n;p;}' | head -n 1)
	fi
	if [[ -n $dir && -d $dir ]]; then
		df -P "$dir" | awk 'NR == 2 { print $1 }'
	fi
}

start_nats() {
	nats_listening && return 0
	if ! command -v nats-server >/dev/null; then
		say "nothing listens on $NATS_URL and nats-server is not installed: skipping JetStream"
		return 1
	fi
	say "   starting nats-server on $nats_host:$nats_port (store $work/nats)"
	nats-server -a "$nats_host" -p "$nats_port" -js -sd "$work/nats" >"$work/nats.log" 2>&1 &
	nats_pid=$!
	for _ in $(seq 50); do
		nats_listening && return 0
		sleep 0.2
	done
	say "nats-server did not come up:"
	cat "$work/nats.log" >&2
	return 1
}

run_jetstream() {
	local out
	out=$("$work/logbench" -mode jetstream -url "$NATS_URL" -records "$records" -size "$RECORD_BYTES" -window "$JS_WINDOW")
	say "   $out"
	record jetstream "$(jget "$out" bytes)" "$(jget "$out" records)" "$(jget "$out" seconds)"
	js_version=$(jget "$out" server_version)
}

disk_fs=$(df -P "$work" | awk 'NR == 2 { print $1 }')
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
say "== $SIZE_MB MiB as $records records of $RECORD_BYTES B in $work ($disk_fs), best of $RUNS run(s)"
if [[ -n $tributary ]]; then
	say "== generating the input of tributary produce (not timed)"
	"$work/logbench" -mode lines -out "$work/records.txt" -records "$records" -size "$RECORD_BYTES"
fi
js_ok=0
js_version=""
start_nats && js_ok=1

say "== dd warm-up (one run of each form, not counted)"
settle
run_dd dd_fdatasync conv=fdatasync warmup
settle
run_dd dd_dsync oflag=dsync warmup
for run in $(seq "$RUNS"); do
	say "== run $run of $RUNS"
	# The two dd forms alternate, so that both see the same moments of a
	# shared disk.
	for _ in $(seq "$DD_RUNS"); do
		settle
		run_dd dd_fdatasync conv=fdatasync
		settle
		run_dd dd_dsync oflag=dsync
	done
	settle
	say "-- log API append, fsync before every ack"
	run_append api "$work/api"
	settle
	say "-- log sequential read"
	run_read "$work/api"
	rm -rf "$work/api"
	settle
	say "-- log API append, FlushInterval=$FLUSH_INTERVAL"
	run_append api_flush "$work/api_flush" -flush-interval "$FLUSH_INTERVAL"
	rm -rf "$work/api_flush"
	settle
	if [[ -n $tributary ]]; then
		say "-- tributary produce < file"
		run_produce "$work/produce"
		rm -rf "$work/produce"
		settle
	fi
	if ((js_ok)); then
		say "-- JetStream publish"
		run_jetstream
		settle
	fi
done

dd_median dd_fdatasync
dd_median dd_dsync

# The table.
declare -A LABEL=(
	[dd_fdatasync]="dd bs=1M conv=fdatasync (one fsync at the end)"
	[dd_dsync]="dd bs=1M oflag=dsync (one fsync per 1 MiB)"
	[api]="log API append, fsync per ack ($INFLIGHT x $BATCH rec in flight)"
	[api_flush]="log API append, FlushInterval=$FLUSH_INTERVAL (no fsync per ack)"
	[produce]="tributary produce < file, fsync per ack"
	[jetstream]="JetStream file store${js_version:+ $js_version}, async window $JS_WINDOW"
	[read]="log sequential read from offset 0 (page cache)"
)
ratio() { # ours baseline
	if [[ -n ${SECS[$1]:-} && -n ${SECS[$2]:-} ]]; then
		printf 'x%.2f' "$(calc "$(mbps "$1") / $(mbps "$2")")"
	else
		printf -- '-'
	fi
}
echo
echo "Tributary partition log benchmark: $SIZE_MB MiB as $records records of $RECORD_BYTES B"
echo "disk: $disk_fs ($(df -PT "$work" | awk 'NR == 2 { print $2 }')), $(nproc) CPUs, best of $RUNS run(s), dd rows the median of $((RUNS * DD_RUNS)) runs after a warm-up, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "load average before: $load_before, after: $(cut -d' ' -f1-3 /proc/loadavg)"
if (($(awk -v l="${load_before%% *}" -v n="$(nproc)" 'BEGIN { print (l > n / 2) }'))); then
	echo "WARNING: the machine was busy when this started; the figures are unreliable (RUNS=3 keeps the best of three)."
fi
echo
printf '%-66s %9s %12s %8s %8s %8s %8s\n' "" "MB/s" "records/s" "seconds" "/dd-fds" "/dd-dsy" "/JS"
for id in dd_fdatasync dd_dsync jetstream api api_flush produce read; do
	[[ -n ${SECS[$id]:-} ]] || continue
	r1="" r2="" r3=""
	case $id in api | api_flush | produce)
		r1=$(ratio "$id" dd_fdatasync) r2=$(ratio "$id" dd_dsync) r3=$(ratio "$id" jetstream)
		;;
	esac
	recs=$(printf '%.0f' "$(rps "$id")")
	[[ $id == dd_* ]] && recs="($recs)"
	printf '%-66s %9.1f %12s %8.2f %8s %8s %8s\n' "${LABEL[$id]}" "$(mbps "$id")" "$recs" "${SECS[$id]}" "$r1" "$r2" "$r3"
done
echo
echo "dd rows: records/s in brackets is the 1 KiB-record equivalent of the bandwidth."
for id in dd_fdatasync dd_dsync api api_flush; do
	[[ -n ${NOTE[$id]:-} ]] && echo "${LABEL[$id]}: ${NOTE[$id]}"
done
[[ -z $produce_skipped ]] || echo "tributary produce: SKIPPED, $produce_skipped."
if ((js_ok)); then
	fs=$(nats_store_fs)
	echo "JetStream: acknowledges once the message is written to its file, and fsyncs on a background"
	echo "  timer (sync_interval, 2 min by default; 'always' exists from nats-server 2.10) - NOT every ack."
	echo "  Compare it with the FlushInterval row for like for like; the targets use the fsync-per-ack rows."
	if [[ -n $fs ]]; then
		echo "  store on $fs$([[ $fs == "$disk_fs" ]] && echo " (same disk)" || echo " (NOT the same disk)")"
	fi
fi
echo

verdict() { # value target
	(($(awk "BEGIN { print ($1 >= $2) }"))) && echo PASS || echo MISS
}
echo "Targets (issue 2)"
printf '%-60s %12s %10s %s\n' "" "measured" "target" ""
target() { # label value target
	printf '%-60s %12s %10s %s\n' "$1" "$2" ">= $3" "$(verdict "$2" "$3")"
}
declare -A WHO=([api]="log API" [produce]="tributary produce")
for id in api produce; do
	[[ -n ${SECS[$id]:-} ]] || continue
	target "${WHO[$id]}: durable append / dd conv=fdatasync" "$(printf '%.2f' "$(calc "$(mbps "$id") / $(mbps dd_fdatasync)")")" 0.5
	if [[ -n ${SECS[jetstream]:-} ]]; then
		target "${WHO[$id]}: durable append / JetStream" "$(printf '%.2f' "$(calc "$(mbps "$id") / $(mbps jetstream)")")" 2
	fi
done
target "sequential read, records/s" "$(printf '%.0f' "$(rps read)")" 1000000
