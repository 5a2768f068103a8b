// Package startup is what both functions' main do before lambda.Start:
// read and check the settings (MCPFN_* and the function's memory), build
// the logger, install the egress policy, set the Go soft memory limit,
// load the AWS configuration, open the catalog store and configure the
// runner. An init error names the variable at fault.
package startup
