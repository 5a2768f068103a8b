# mcpfn: the two targets a fresh machine needs are `make run` and `make test`.
# Each concern adds its own targets in mk/*.mk; this file only aggregates.

SHELL := /bin/bash
GO ?= go
GOBIN := $(shell $(GO) env GOPATH)/bin
export PATH := $(GOBIN):$(PATH)

STATICCHECK_VERSION := v0.8.2
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d

# Fragments append to these.
TEST_TARGETS :=
LINT_TARGETS :=
BENCH_TARGETS :=

.PHONY: all test lint run bench tools test-go lint-go
all: lint test

include $(sort $(wildcard mk/*.mk))

test: test-go $(TEST_TARGETS)

lint: lint-go $(LINT_TARGETS)

bench: $(BENCH_TARGETS)

test-go: tools
	$(GO) test -race -count=1 ./...

lint-go: tools
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	staticcheck ./...
	$(GO) mod verify

# tools installs the Go-proxy tools the targets use, once per machine.
tools: $(GOBIN)/staticcheck $(GOBIN)/aws-lambda-rie

$(GOBIN)/staticcheck:
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

$(GOBIN)/aws-lambda-rie:
	$(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)
