package catalogtest

import (
	"testing"

	"github.com/mcpfn/mcpfn/internal/localstack"
	"github.com/mcpfn/mcpfn/shared/catalog"
)

// StrictAPI is localstack.Strict: atomic single-item writes over moto, and
// BatchWriteItem limits checked.
type StrictAPI = localstack.Strict

// Strict wraps api, keyed by the catalog's keys; a batch DynamoDB would
// refuse fails tb.
func Strict(tb testing.TB, api localstack.DynamoAPI) *StrictAPI {
	s := localstack.NewStrict(api, catalog.PartitionKey, catalog.SortKey)
	s.OnViolation = func(err error) { tb.Errorf("catalogtest: %v", err) }
	return s
}
