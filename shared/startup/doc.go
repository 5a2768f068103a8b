// Package startup is what both functions' main do before lambda.Start:
// check the MCPFN_* names, read and check the settings and their
// combinations (refusing the local stores inside Lambda unless
// MCPFN_LOCAL=1), build the logger, install the egress policy, set the Go
// soft memory limit, load the AWS configuration, open the catalog store and
// configure the runner. An init error is a *ConfigError naming the
// variables at fault; Fail prints it as one JSON line with error_type
// configuration_error.
package startup
