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
#   DURATION=4m bench/crash/run.sh -scenarios mysql
#                                  # MariaDB → mysql source → file sink, with XA transactions
#
# Scenarios not in the default set, each starting a throwaway database server
# from the installed binaries (skipped, with the reason, when they are missing):
#   postgres  logical replication; every committed row in the topic
#   mysql     MariaDB (mariadbd, mariadb-install-db) with the binlog in ROW format
#             and GTIDs; a client commits inserts, updates and deletes (some of
#             several rows) and XA transactions (XA PREPARE, then XA COMMIT or
#             XA ROLLBACK, at once or later from another session, often after a
#             worker kill; some XA COMMIT ONE PHASE) all along the kill loop.
#             Checked on the file sink's output: every committed change (each
#             row version is unique) is there after the final clean run, each
#             key's changes first appear in commit order (repeats after a kill
#             are allowed: at least once), and no change of a rolled-back or
#             still undecided XA transaction ever appears; at the end the table
#             must equal the soak's model of it.
#
# Environment (defaults in brackets):
#   DURATION [1m]   length of each scenario's kill loop
#   NICE [19]       niceness of the soak and everything it starts (the machine is shared)
# Extra arguments go to the program (-scenarios httptrack,generator,produce,postgres,mysql,
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
