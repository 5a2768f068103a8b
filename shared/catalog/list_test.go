package catalog_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/schedule"
)

// onePerPage makes every Scan page hold at most one item, so List must
// follow LastEvaluatedKey through the table.
type onePerPage struct{ *dynamodb.Client }

func (c onePerPage) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	in.Limit = aws.Int32(1)
	return c.Client.Scan(ctx, in, opts...)
}

// TestList stores three catalogs (scheduled, scheduled with a failure
// streak, only failed) whose tool items share the table with their heads,
// and lists exactly the three heads with their schedules.
func TestList(t *testing.T) {
	t.Parallel()
	client, table := catalogtest.NewTable(t, awstest.SharedMoto(t))
	s := catalog.NewDynamo(client, table)
	ctx := t.Context()
	listing := mcp.Listing{Tools: []mcp.Tool{catalogtest.Tool("a", "a"), catalogtest.Tool("b", "b")}}
	hour, day := time.Hour, 24*time.Hour
	for id, iv := range map[string]*time.Duration{"hourly": &hour, "daily": &day} {
		d := catalogtest.Discover(listing, 0)
		d.Schedule = &catalog.Schedule{ServerURL: "https://mcp.example.com/secret-path", Interval: iv}
		catalogtest.MustPut(t, s, id, d)
	}
	failure := catalog.Failure{ErrorType: "mcp_connection_failed_error", Message: "dial: refused", At: catalogtest.T0.Add(time.Hour)}
	for _, id := range []string{"daily", "failed"} {
		if err := s.RecordFailure(ctx, id, failure); err != nil {
			t.Fatal(err)
		}
	}
	now := catalogtest.T0.Add(2 * time.Hour)
	b, err := schedule.New(client, table, schedule.Options{Now: func() time.Time { return now }}).RecordFailure(ctx, "daily")
	if err != nil || b.Failures != 1 {
		t.Fatalf("schedule.RecordFailure = %+v, %v; want one failure", b, err)
	}

	var got []catalog.Summary
	if err := catalog.List(ctx, onePerPage{client}, table, func(s catalog.Summary) error {
		got = append(got, s)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b catalog.Summary) int { return strings.Compare(a.ID, b.ID) })
	version := func(id string) string {
		c, err := s.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return c.Version
	}
	want := []catalog.Summary{
		{ID: "daily", Version: version("daily"), ToolCount: 2, DiscoveredAt: catalogtest.T0, CheckedAt: catalogtest.T0,
			LastFailure: &failure, RefreshInterval: day, NextDue: catalogtest.T0.Add(day), Failures: 1, RetryAfter: b.RetryAfter.UTC()},
		{ID: "failed", LastFailure: &failure},
		{ID: "hourly", Version: version("hourly"), ToolCount: 2, DiscoveredAt: catalogtest.T0, CheckedAt: catalogtest.T0,
			RefreshInterval: hour, NextDue: catalogtest.T0.Add(hour)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}

	one, err := catalog.ReadSummary(ctx, client, table, "daily")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want[0], one); diff != "" {
		t.Errorf("ReadSummary (-want +got):\n%s", diff)
	}
	if _, err := catalog.ReadSummary(ctx, client, table, "nobody"); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("ReadSummary of a missing id: %v, want ErrNotFound", err)
	}

	stop := errors.New("stop")
	n := 0
	err = catalog.List(ctx, client, table, func(catalog.Summary) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("List with fn failing: %v after %d calls, want fn's error after 1", err, n)
	}
}
