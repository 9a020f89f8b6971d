.PHONY: build test bench-log

# The release and commit the binary reports (tributary version, GET /).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

build:
	go build -ldflags "$(LDFLAGS)" -o bin/tributary ./cmd/tributary

test:
	./scripts/test.sh

bench-log:
	./bench/log/run.sh
