package schema

import (
	"regexp"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Bounds of the compiled-pattern verdicts kept per process.
const (
	patternCacheSize = 1024
	maxCachedPattern = 256 // bytes; a longer pattern is compiled every time
)

// patternVerdicts keeps regexp.Compile's error (nil: it compiles) per
// pattern: realistic schemas repeat a few patterns (dates, emails,
// identifiers), and compiling them was a third of index's time on new
// distinct schemas (DESIGN.md, "Resolving without jsonschema-go").
var patternVerdicts = func() *lru.Cache[string, error] {
	c, err := lru.New[string, error](patternCacheSize)
	if err != nil {
		panic("schema: " + err.Error())
	}
	return c
}()

// compiles returns regexp.Compile(p)'s error, remembered for short
// patterns; a compile error is a value of the pattern alone.
func compiles(p string) error {
	if len(p) > maxCachedPattern {
		_, err := regexp.Compile(p)
		return err
	}
	if err, ok := patternVerdicts.Get(p); ok {
		return err
	}
	_, err := regexp.Compile(p)
	patternVerdicts.Add(p, err)
	return err
}
