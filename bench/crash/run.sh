#!/usr/bin/env bash
# Crash soak of the real binary (not part of CI: it runs for minutes). Builds
# `tributary` and the soak program into a temp dir, then runs each scenario's
# kill loop: start `tributary run`, drive load, SIGKILL it at a random moment,
# restart, check that nothing acknowledged was lost. See main.go for the
# invariants of each scenario.
#
#   bench/crash/run.sh                                  # 1 minute per scenario
#   DURATION=5m bench/crash/run.sh -scenarios httptrack
#   bench/crash/run.sh -seed 12345 -rounds 20           # replay a seed's choices
#   bench/crash/run.sh -keep -v                         # keep the data; print worker ERROR lines
#   bench/crash/run.sh -scenarios httptrack -control-no-dedup
#                                  # control: dedup off, so the soak must report duplicates
#
# Environment (defaults in brackets):
#   DURATION [1m]   length of each scenario's kill loop
#   NICE [19]       niceness of the soak and everything it starts (the machine is shared)
# Extra arguments go to the program (-scenarios httptrack,generator,produce,postgres,
# -seed, -rounds, -long, -work, -keep, -v, -control-no-dedup).
# Exit status 1 when an invariant was broken; the work dir is then kept, with
# each scenario's worker.log.
set -euo pipefail
export LC_ALL=C

DURATION=${DURATION:-1m}
NICE=${NICE:-19}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT

echo "== building tributary and the soak" >&2
(cd "$repo" && nice -n "$NICE" go build -o "$bin/tributary" ./cmd/tributary &&
	nice -n "$NICE" go build -o "$bin/crashsoak" ./bench/crash)
nice -n "$NICE" "$bin/crashsoak" -bin "$bin/tributary" -duration "$DURATION" "$@"
