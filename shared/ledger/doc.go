// Package ledger records tool calls by idempotency key so that each runs at
// most once although SQS delivers at least once. Begin takes a lease on a key,
// Complete stores the outcome, Release gives the lease back after a failure
// worth retrying. Dynamo keeps the ledger in a DynamoDB table; Memory is the
// same contract in process, for tests and local runs.
//
// The table (CreateTable makes it): on-demand billing, partition key
// KeyAttribute ("pk", string), TTL on TTLAttribute ("expires_at", epoch
// seconds). An item carries:
//
//	pk           the idempotency key (sha256:<hex> when over MaxKeyBytes)
//	state        "running" or "done"
//	owner        random token of the delivery holding the lease
//	lease_until  epoch milliseconds; a running item past it may be taken over
//	outcome      the Outcome as JSON, on done items
//	expires_at   epoch seconds, Retention after the last write
//
// Rationale: DESIGN.md.
package ledger
