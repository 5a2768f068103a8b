# Deployment builds (SAM BuildMethod: makefile), local runs under the Lambda
# RIE, and the static gates on template.yaml and the state machines.

LAMBDA_BUILD = CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' -o $(ARTIFACTS_DIR)/bootstrap
ASL_FILES := $(sort $(wildcard statemachine/*.asl.json))
# RUN_FLAGS passes options to cmd/localrun, e.g. RUN_FLAGS='-v -store dir'.
RUN_FLAGS ?=
LOCALRUN = bin/localrun -rie $(GOBIN)/aws-lambda-rie $(RUN_FLAGS)

LINT_TARGETS += lint-template lint-asl

.PHONY: build-DiscoverFunction build-CallFunction lint-template lint-asl

build-DiscoverFunction:
	$(if $(ARTIFACTS_DIR),,$(error $@: ARTIFACTS_DIR is not set; sam build sets it))
	$(LAMBDA_BUILD) ./functions/discover

build-CallFunction:
	$(if $(ARTIFACTS_DIR),,$(error $@: ARTIFACTS_DIR is not set; sam build sets it))
	$(LAMBDA_BUILD) ./functions/call

# run builds both functions for this machine, starts the example MCP server,
# the functions under the RIE and a store, invokes discover then call, prints
# the catalog and the tool result, does the same against the OAuth example
# server with an expired token (moto only), and stops everything it started.
run: $(GOBIN)/aws-lambda-rie ## build both functions, run them locally against the example MCP server, print the results
	@echo "run: building cmd/localrun into bin/ ..."
	@$(GO) build -o bin/localrun ./cmd/localrun
	$(LOCALRUN)

# invoke-<event> runs the same stack for events/<event>.json alone and
# fails when the outcome is not the one the event expects.
invoke-%: $(GOBIN)/aws-lambda-rie ## run one events/<event>.json; fails when its outcome is not the expected one
	@echo "invoke: building cmd/localrun into bin/ ..."
	@$(GO) build -o bin/localrun ./cmd/localrun
	$(LOCALRUN) -event events/$*.json

lint-template:
	@command -v cfn-lint >/dev/null || { echo "lint-template: cfn-lint is required (pip install cfn-lint)"; exit 1; }
	cfn-lint --include-checks I -- template.yaml
	$(GO) test -count=1 ./e2e/template/

lint-asl: e2e-deps
	$(E2E_NODE) $(E2E_DIR)/node_modules/asl-validator/dist/bin/asl-validator.js $(foreach f,$(ASL_FILES),--json-path $(f))
