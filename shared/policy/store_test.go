package policy_test

import (
	"errors"
	"testing"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
	"github.com/mcpfn/mcpfn/shared/policy"
)

// TestStoreOverDynamo: a policy set is read back as written, beside a
// catalog it leaves alone; an invalid one is refused and writes nothing;
// deleted, the catalog has none.
func TestStoreOverDynamo(t *testing.T) {
	t.Parallel()
	client, table := catalogtest.NewTable(t, awstest.SharedMoto(t))
	s := policy.NewStore(client, table)
	if doc, err := s.Get(t.Context(), "cat"); doc != nil || err != nil {
		t.Fatalf("no policy: %q, %v", doc, err)
	}
	if err := s.Put(t.Context(), "cat", []byte(transfers)); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), "cat", []byte(`{"default": "never"}`)); !errors.Is(err, policy.ErrInvalid) {
		t.Errorf("an invalid policy: %v, want ErrInvalid", err)
	}
	doc, err := s.Get(t.Context(), "cat")
	if err != nil || string(doc) != transfers {
		t.Fatalf("Get = %q, %v; want the document as written", doc, err)
	}
	if _, err := catalog.NewDynamo(client, table).Lookup(t.Context(), "cat", "transfer"); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("a policy made a catalog: Lookup = %v, want ErrNotFound", err)
	}
	if err := s.Delete(t.Context(), "cat"); err != nil {
		t.Fatal(err)
	}
	if doc, err := s.Get(t.Context(), "cat"); doc != nil || err != nil {
		t.Errorf("deleted: %q, %v; want none", doc, err)
	}
	if err := s.Put(t.Context(), "", []byte(`{}`)); !errors.Is(err, catalog.ErrInvalidID) {
		t.Errorf("an empty id: %v, want ErrInvalidID", err)
	}
}
