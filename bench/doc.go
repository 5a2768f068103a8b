// Package bench measures mcpfn against its anchors: shared/mcp against the
// raw go-sdk client, the functions under the Lambda RIE, and the catalog
// store over a DynamoDB-compatible server. Each measurement returns numbers;
// cmd/benchreport runs them all and writes docs/benchmarks.md. Nothing here
// asserts a time.
package bench
