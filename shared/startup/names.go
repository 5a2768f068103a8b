package startup

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/telemetry"
)

// SettingPrefix starts the name of every setting of the functions.
const SettingPrefix = "MCPFN_"

// KnownSettings lists every MCPFN_ variable the functions read.
var KnownSettings = []string{
	EnvCatalogTable, EnvCatalogDir, EnvCallsTable, EnvSecretsPrefix, EnvDLQURL,
	EnvDiscoverQueueURL, EnvResultsBucket, EnvMaxResultBytes, EnvBatchConcurrency,
	EnvReserve, EnvOperationTimeout, EnvLogLevel, EnvSealKeyID, EnvLocal, EnvTaskPollMin, EnvAuditTable,
	guard.EnvAllowList, telemetry.EnvTraces,
}

// CheckNames returns a *ConfigError naming each variable of environ
// (KEY=VALUE entries, as os.Environ) that starts with SettingPrefix but is
// not in KnownSettings, with the closest known name when one is near; nil
// when there is none.
func CheckNames(environ []string) error {
	var names []string
	var errs []error
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, SettingPrefix) || slices.Contains(KnownSettings, name) || slices.Contains(names, name) {
			continue
		}
		names = append(names, name)
		if near := closest(name); near != "" {
			errs = append(errs, fmt.Errorf("%s: unknown setting; did you mean %s?", name, near))
		} else {
			errs = append(errs, fmt.Errorf("%s: unknown setting (docs/operations.md lists the settings)", name))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &ConfigError{Variables: names, Err: fmt.Errorf("configuration: %w", errors.Join(errs...))}
}

// closest returns the known setting nearest to name by edit distance, or
// "" when none is within a third of its length (a typo, not another word).
func closest(name string) string {
	best, bestD := "", len(name)/3+1
	for _, k := range KnownSettings {
		if d := editDistance(strings.ToUpper(name), k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Damerau–Levenshtein distance (optimal string
// alignment) between a and b, in bytes: a swap of two neighbours is one edit.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
