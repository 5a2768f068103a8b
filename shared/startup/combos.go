package startup

import (
	"fmt"
	"strconv"
	"time"

	"github.com/mcpfn/mcpfn/shared/runner"
)

// problem is one combination of settings that cannot work, and the
// variables it involves.
type problem struct {
	names []string
	err   error
}

// checkCombinations returns each combination of the (individually valid)
// settings s that cannot work:
//   - a reserve longer than the operation timeout;
//   - with the function timeout EnvFunctionTimeout set (the emulator sets
//     it; Lambda does not): a reserve that leaves no work item its least
//     budget (runner.DefaultMinBudget), and an operation timeout set
//     explicitly that the reserve and the function timeout never let run out;
//   - both a catalog table and a catalog directory;
//   - inside Lambda, the directory store, unless EnvLocal is "1".
func checkCombinations(s Settings, getenv func(string) string) []problem {
	var ps []problem
	add := func(names []string, format string, args ...any) {
		ps = append(ps, problem{names: names, err: fmt.Errorf(format, args...)})
	}
	if s.Reserve > s.OperationTimeout {
		add([]string{EnvReserve, EnvOperationTimeout}, "%s=%s is longer than %s=%s: the reserve follows each operation and must be shorter than it",
			EnvReserve, s.Reserve, EnvOperationTimeout, s.OperationTimeout)
	}
	if v := getenv(EnvFunctionTimeout); v != "" {
		secs, err := strconv.Atoi(v)
		if err != nil || secs < 1 {
			add([]string{EnvFunctionTimeout}, "%s=%q: want the function timeout in whole seconds", EnvFunctionTimeout, v)
		} else {
			timeout := time.Duration(secs) * time.Second
			switch {
			case s.Reserve+runner.DefaultMinBudget >= timeout:
				add([]string{EnvReserve, EnvFunctionTimeout}, "%s=%s leaves no work item the least budget of %s within %s=%d: nothing would ever start",
					EnvReserve, s.Reserve, runner.DefaultMinBudget, EnvFunctionTimeout, secs)
			case getenv(EnvOperationTimeout) != "" && s.Reserve+s.OperationTimeout >= timeout:
				add([]string{EnvOperationTimeout, EnvReserve, EnvFunctionTimeout}, "%s=%s plus %s=%s is not shorter than %s=%d: the operation timeout could never run out",
					EnvOperationTimeout, s.OperationTimeout, EnvReserve, s.Reserve, EnvFunctionTimeout, secs)
			}
		}
	}
	if s.CatalogTable != "" && getenv(EnvCatalogDir) != "" {
		add([]string{EnvCatalogTable, EnvCatalogDir}, "both %s and %s are set: set the table, or the directory for a local run", EnvCatalogTable, EnvCatalogDir)
	}
	if s.InLambda && !s.Local {
		switch {
		case getenv(EnvCatalogDir) != "":
			add([]string{EnvCatalogDir}, "%s is set inside Lambda (%s=%s): the directory store keeps catalogs on one instance's disk; set %s, or %s=1 for a local run",
				EnvCatalogDir, EnvFunctionName, getenv(EnvFunctionName), EnvCatalogTable, EnvLocal)
		case s.CatalogTable == "":
			add([]string{EnvCatalogTable}, "%s is not set inside Lambda (%s=%s): the directory store would keep catalogs on one instance's disk; set the table, or %s=1 for a local run",
				EnvCatalogTable, EnvFunctionName, getenv(EnvFunctionName), EnvLocal)
		}
	}
	return ps
}

// LocalStore returns nil when a local store may stand in for the table
// that variable names: outside Lambda, or with EnvLocal "1". Otherwise it
// returns a *ConfigError naming variable; what says what the local store
// would lose.
func (s Settings) LocalStore(variable, what string) error {
	if !s.InLambda || s.Local {
		return nil
	}
	return configErrorf(variable, "%s is not set inside Lambda (%s is set): %s; set the table, or %s=1 for a local run",
		variable, EnvFunctionName, what, EnvLocal)
}
