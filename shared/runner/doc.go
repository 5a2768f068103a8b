// Package work is the event plumbing the functions share: it tells a direct
// invocation from an SQS batch, runs the batch's records concurrently within
// their budgets, and reports every outcome where it belongs — the invocation's
// result or wire error, a task token, the queue (batch item failure) or the
// dead-letter queue — with one JSON summary line and one CloudWatch EMF
// metrics line per work item. Init and Startup are the start-up both
// functions' main share.
//
// A function supplies a Processor; errors carry their wire type as an
// *Error (see ErrorType and ClassifyMCP). Rationale: DESIGN.md; the
// contract as callers see it: docs/contract.md and docs/errors.md.
package work
