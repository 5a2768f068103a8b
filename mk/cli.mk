# Operator commands and local use: the CLIs built into bin/, the local stack
# kept running for them, and a SAM deployment with samconfig.toml.

BIN_DIR := bin

.PHONY: bin up deploy

bin: ## build mcpfn-catalog and mcpfn-auth into bin/
	@echo "bin: building mcpfn-catalog and mcpfn-auth into $(BIN_DIR)/"
	$(GO) build -trimpath -o $(BIN_DIR)/ ./cmd/mcpfn-catalog ./cmd/mcpfn-auth

up: $(GOBIN)/aws-lambda-rie ## start the local stack (moto, example servers, functions) until Ctrl-C; prints the variables to export
	@echo "up: building cmd/localrun into $(BIN_DIR)/"
	$(GO) build -o $(BIN_DIR)/localrun ./cmd/localrun
	exec $(BIN_DIR)/localrun -up -rie $(GOBIN)/aws-lambda-rie $(RUN_FLAGS)

deploy: ## sam build && sam deploy with samconfig.toml (stack mcpfn; confirms the change set)
	@command -v sam >/dev/null || { echo "deploy: the AWS SAM CLI is required and not installed: https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/install-sam-cli.html"; exit 1; }
	sam build
	sam deploy
