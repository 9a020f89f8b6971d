.PHONY: build test bench-log

build:
	go build -o bin/tributary ./cmd/tributary

test:
	./scripts/test.sh

bench-log:
	./bench/log/run.sh
