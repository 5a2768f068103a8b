package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/bench/item"
)

// fixtureRole, set in the environment, makes the test binary serve the
// fixtures (ServeFixturesUntilEOF) instead of running tests, so that the
// benchmarks' fixture servers allocate in another process.
const fixtureRole = "MCPFN_BENCH_FIXTURES"

var (
	fixturesOnce sync.Once
	fixtures     *Fixtures
	fixturesErr  error
)

func TestMain(m *testing.M) {
	if os.Getenv(fixtureRole) == "1" {
		if err := ServeFixturesUntilEOF(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if fixtures != nil {
		fixtures.Stop()
	}
	os.Exit(code)
}

// benchFixtures starts the fixture child on first use.
func benchFixtures(b testing.TB) *Fixtures {
	b.Helper()
	fixturesOnce.Do(func() {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), fixtureRole+"=1")
		cmd.Stderr = os.Stderr
		fixtures, fixturesErr = StartFixtures(cmd)
	})
	if fixturesErr != nil {
		b.Fatal(fixturesErr)
	}
	return fixtures
}

// BenchName is the sub-benchmark name of a client.
var BenchName = map[item.Client]string{item.Ours: "shared-mcp", item.SDK: "go-sdk"}

// BenchmarkItem runs the overhead work item (connect, list 50 tools, call
// echo, close) per era and client against fixtures in a child process, so
// that -benchmem counts the client's allocations only.
func BenchmarkItem(b *testing.B) {
	fx := benchFixtures(b)
	for _, era := range Eras {
		for _, c := range item.Clients {
			b.Run(era+"/"+BenchName[c], func(b *testing.B) {
				spec, err := EchoSpec(fx.URL[era])
				if err != nil {
					b.Fatal(err)
				}
				defer spec.HTTPClient.CloseIdleConnections()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				b.ReportAllocs()
				for b.Loop() {
					if err := item.Run(ctx, c, spec); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestRTTRun runs one item of every RTT case through a 2 ms proxy and
// checks the requests each sent (counts only; no time is checked).
func TestRTTRun(t *testing.T) {
	fx := benchFixtures(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	samples, err := RTTRun(ctx, fx.URL, 2*time.Millisecond, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	// legacy: server/discover (refused without a hint), initialize,
	// notifications/initialized, the work, DELETE; stateless: server/discover
	// and the work; primed: the work.
	want := map[RTTCase]int{}
	for _, c := range RTTCases() {
		switch {
		case c.Primed:
			want[c] = 1
		case c.Era == Stateless:
			want[c] = 2
		case c.Hint != "":
			want[c] = 4
		default:
			want[c] = 5
		}
	}
	got := map[RTTCase]int{}
	for _, s := range samples {
		if s.Err != nil {
			t.Errorf("%+v: %d failed: %v", s.Case, s.Failed, s.Err)
		}
		if len(s.Times) != 1 || len(s.Requests) != 1 {
			t.Errorf("%+v: %d times and %d request counts, want 1 each", s.Case, len(s.Times), len(s.Requests))
		}
		if len(s.Requests) > 0 {
			got[s.Case] = s.Requests[0]
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests per item (-want +got):\n%s", diff)
	}
}
