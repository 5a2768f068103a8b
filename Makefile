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

.PHONY: all help test lint run bench tools test-go lint-go
all: lint test

include $(sort $(wildcard mk/*.mk))

# help lists every target that has a `## text` comment on its rule line.
help: ## list the targets
	@awk -F':.*## ' '/^[a-zA-Z0-9%_-]+:.*## / { t = $$1; sub(/%/, "<event>", t); printf "  %-20s %s\n", t, $$2 }' $(MAKEFILE_LIST)

test: test-go $(TEST_TARGETS) ## the whole test suite: go test -race, the state machines, interop

lint: lint-go $(LINT_TARGETS) ## gofmt, go vet, staticcheck, go mod verify, cfn-lint, asl-validator

bench: $(BENCH_TARGETS) ## run the benchmarks and rewrite docs/benchmarks.md

test-go: tools
	$(GO) test -race -count=1 -timeout 25m ./...

lint-go: tools
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	staticcheck ./...
	$(GO) mod verify

# tools installs the Go-proxy tools the targets use, once per machine.
tools: $(GOBIN)/staticcheck $(GOBIN)/aws-lambda-rie ## install the RIE and staticcheck from the Go module proxy, once

$(GOBIN)/staticcheck:
	@echo "tools: installing staticcheck $(STATICCHECK_VERSION) into $(GOBIN), once per machine (a minute or two) ..."
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

$(GOBIN)/aws-lambda-rie:
	@echo "tools: installing the Lambda Runtime Interface Emulator into $(GOBIN), once per machine ..."
	$(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)
