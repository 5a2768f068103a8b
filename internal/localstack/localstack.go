// Package localstack runs a local AWS stack on loopback for programs and
// tests alike: a moto server for DynamoDB, SQS, Secrets Manager and KMS
// (StartMoto), function binaries under the Lambda Runtime Interface
// Emulator (StartFunction), a Step Functions endpoint that records task
// reports (StartTaskRecorder), an OAuth authorization server
// (StartAuthServer), and Strict, a DynamoDB wrapper that makes moto's
// conditional writes atomic as DynamoDB's are.
//
// Every constructor returns an error instead of taking a testing.TB, and
// the package links no testing code: cmd/localrun, bench and the
// test-helper packages (awstest, rietest, runnertest, ...) build on it.
// Each process it starts is stopped by its Stop or Close, by pid.
package localstack
