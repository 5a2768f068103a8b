package main

import (
	"context"
	"io"
	"slices"
	"strings"

	"github.com/mcpfn/mcpfn/shared/catalog"
)

// summaryJSON is one entry of what list prints (docs/contract.md): a
// catalog's head without its tools. Version and discovered_at are
// absent when only failures are recorded.
type summaryJSON struct {
	ID           string        `json:"id"`
	Version      string        `json:"version,omitempty"`
	ToolCount    int           `json:"tool_count"`
	DiscoveredAt string        `json:"discovered_at,omitempty"`
	CheckedAt    string        `json:"checked_at,omitempty"`
	LastFailure  *failureJSON  `json:"last_failure,omitempty"`
	Schedule     *scheduleJSON `json:"schedule,omitempty"`
}

// scheduleJSON is a catalog's schedule: its refresh interval, when it is
// due next, and its current failure streak with the time before which
// the sweep does not retry. Absent (nil) when the catalog is off the
// schedule and has no streak.
type scheduleJSON struct {
	RefreshIntervalSeconds int64  `json:"refresh_interval_seconds"`
	NextDue                string `json:"next_due,omitempty"`
	Failures               int    `json:"failures"`
	RetryAfter             string `json:"retry_after,omitempty"`
}

// getJSON is what get prints: the catalog, and for a table its schedule.
type getJSON struct {
	catalogJSON
	Schedule *scheduleJSON `json:"schedule,omitempty"`
}

func scheduleOf(s catalog.Summary) *scheduleJSON {
	if s.RefreshInterval <= 0 && s.NextDue.IsZero() && s.Failures == 0 {
		return nil
	}
	return &scheduleJSON{
		RefreshIntervalSeconds: int64(s.RefreshInterval.Seconds()),
		NextDue:                timestamp(s.NextDue),
		Failures:               s.Failures,
		RetryAfter:             timestamp(s.RetryAfter),
	}
}

func summaryOutput(s catalog.Summary) summaryJSON {
	out := summaryJSON{
		ID: s.ID, Version: s.Version, ToolCount: s.ToolCount,
		DiscoveredAt: timestamp(s.DiscoveredAt), CheckedAt: timestamp(s.CheckedAt),
		Schedule: scheduleOf(s),
	}
	if f := s.LastFailure; f != nil {
		out.LastFailure = &failureJSON{ErrorType: f.ErrorType, Message: f.Message, At: timestamp(f.At)}
	}
	return out
}

// runList prints every catalog's summary in a table, sorted by id. The
// directory store keeps no schedule and has no listing.
func runList(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	fs := newFlagSet("list", stdout)
	var sf storeFlags
	sf.register(fs.FlagSet)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("list takes no arguments, got %q", fs.Args())
	}
	ctx, s, cancel, err := openBounded(ctx, sf, getenv)
	if err != nil {
		return err
	}
	defer cancel()
	if s.api == nil {
		return usagef("list reads a DynamoDB table (--table or %s); the directory store has no listing", "MCPFN_CATALOG_TABLE")
	}
	out := []summaryJSON{}
	err = catalog.List(ctx, s.api, s.table, func(c catalog.Summary) error {
		out = append(out, summaryOutput(c))
		return nil
	})
	if err != nil {
		return s.fail(ctx, err)
	}
	slices.SortFunc(out, func(a, b summaryJSON) int { return strings.Compare(a.ID, b.ID) })
	return writeJSON(stdout, out)
}

// runGet prints one catalog; from a table, with its schedule, read right
// after the catalog.
func runGet(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	fs := newFlagSet("get", stdout)
	var sf storeFlags
	sf.register(fs.FlagSet)
	id, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := catalog.ValidateID(id); err != nil {
		return err
	}
	ctx, s, cancel, err := openBounded(ctx, sf, getenv)
	if err != nil {
		return err
	}
	defer cancel()
	c, err := s.read(ctx, id)
	if err != nil {
		return err
	}
	out := getJSON{catalogJSON: catalogOutput(c)}
	if s.api != nil {
		sum, err := catalog.ReadSummary(ctx, s.api, s.table, id)
		if err != nil {
			return s.fail(ctx, err)
		}
		out.Schedule = scheduleOf(sum)
	}
	return writeJSON(stdout, out)
}
