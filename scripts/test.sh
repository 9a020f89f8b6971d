#!/usr/bin/env bash
# The one test command (README: `make test`). Runs on a fresh machine with Go:
# format and vet checks, staticcheck, then every test with the race detector.
set -euo pipefail
cd "$(dirname "$0")/.."

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
