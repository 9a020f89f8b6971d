#!/usr/bin/env bash
# The one test command (README: `make test`). Runs on a fresh machine with Go:
# format and vet checks, staticcheck, then every test with the race detector.
set -euo pipefail
cd "$(dirname "$0")/.."

# Real clients written by others, used by the Kafka listener's tests: kcat
# from Debian (node/npm for kafkajs and analytics-node come with the machine).
if ! command -v kcat >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing kcat (Debian package) for the Kafka listener's client tests"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat >/dev/null) ||
      echo "warning: could not install kcat; the kcat tests will fail (TRIBUTARY_SKIP_KCAT=1 skips them)"
  else
    echo "warning: kcat is not installed (apt-get install kcat); the kcat tests will fail (TRIBUTARY_SKIP_KCAT=1 skips them)"
  fi
fi

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

echo "== go test"
go test -race -timeout 14m -count=1 ./...
