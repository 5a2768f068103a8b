package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/audit"
	"github.com/mcpfn/mcpfn/shared/catalog"
)

// quarantineStore answers every Put with res, recording the discovery.
type quarantineStore struct {
	*fakeStore
	res catalog.PutResult
	got []catalog.Discovery
}

func (s *quarantineStore) Put(_ context.Context, _ string, d catalog.Discovery) (catalog.PutResult, error) {
	s.got = append(s.got, d)
	return s.res, nil
}

type fakeAuditor struct {
	mu      sync.Mutex
	entries []audit.Entry
}

func (a *fakeAuditor) Append(_ context.Context, e audit.Entry) (audit.Entry, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.entries = append(a.entries, e)
	return e, nil
}

func TestQuarantineResultAndAudit(t *testing.T) {
	e := newEnv(t)
	st := &quarantineStore{fakeStore: e.store, res: catalog.PutResult{
		Version: "v2",
		Changes: &catalog.Changes{Added: []string{"fresh"}, Changed: []string{"search_docs"}, AddedCount: 1, ChangedCount: 1},
		Quarantined: []catalog.Quarantined{
			{Name: "fresh", Reason: "new tool"},
			{Name: "older", Reason: "input schema"}, // quarantined before: no new decision
			{Name: "search_docs", Reason: "description"},
		},
	}}
	a := &fakeAuditor{}
	e.handler.Store, e.handler.Auditor = st, a
	got := e.Invoke(t, request(map[string]any{"on_change": "quarantine"}))
	if got.Error != nil {
		t.Fatal(got.Error)
	}
	if len(st.got) != 1 || st.got[0].OnChange != catalog.OnChangeQuarantine || st.got[0].Define == nil {
		t.Fatalf("stored %+v, want on_change quarantine and a Definer", st.got)
	}
	var res Result
	if err := json.Unmarshal(got.Result, &res); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(st.res.Quarantined, res.Quarantined); diff != "" {
		t.Errorf("result's quarantined (-want +got):\n%s", diff)
	}
	want := []audit.Entry{
		{CatalogID: "example", Version: "v2", Tool: "fresh", Decision: audit.Quarantined, Rule: "new tool", By: "discover"},
		{CatalogID: "example", Version: "v2", Tool: "search_docs", Decision: audit.Quarantined, Rule: "description", By: "discover"},
	}
	if diff := cmp.Diff(want, a.entries); diff != "" {
		t.Errorf("audit entries (-want +got):\n%s", diff)
	}
}

func TestOnChangeRefused(t *testing.T) {
	for _, tc := range []struct {
		name, mode string
		fail       error
		want       string
	}{
		{"unknown mode", "reject", nil, `on_change: catalog: invalid on_change: "reject" (want "accept" or "quarantine")`},
		{"store cannot quarantine", "quarantine", fmt.Errorf("%w: the directory store keeps no approvals", catalog.ErrQuarantineUnsupported),
			"on_change: catalog: quarantine not supported by this store: the directory store keeps no approvals"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.store.fail = tc.fail
			got := e.Invoke(t, request(map[string]any{"on_change": tc.mode}))
			if got.Error == nil || got.Error.Type != "invalid_request_error" || got.Error.Message != tc.want {
				t.Errorf("error = %+v, want invalid_request_error %q", got.Error, tc.want)
			}
		})
	}
}
