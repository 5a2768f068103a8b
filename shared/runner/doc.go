// Package runner is the Lambda handler both functions share: it takes the
// raw payload (lambda.Handler), tells a direct invocation from an SQS
// batch, decodes each request exactly, runs work items within their
// budgets, their memory slots and the reserve, and reports every outcome
// where it belongs — the invocation's result or wire error, a task token,
// the queue (batch item failure) or the dead-letter queue — with one JSON
// summary line and one CloudWatch EMF metrics line per work item.
//
// A function supplies a Processor; its errors carry their wire type as a
// *wire.Error. Rationale: DESIGN.md; the contract as callers see it:
// docs/contract.md and docs/errors.md.
package runner
