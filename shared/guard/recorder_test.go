package guard_test

import (
	"errors"
	"testing"

	"github.com/mcpfn/mcpfn/shared/guard"
)

// TestRecorderKeepsTheRefusal: a request the guard's dialer refuses
// leaves its *DeniedError with the Recorder, an allowed one does not, and
// the copy keeps the client's redirect policy and timeout.
func TestRecorderKeepsTheRefusal(t *testing.T) {
	allowed, hits := countingServer(t)
	base := guard.NewClientWithPolicy(mustPolicy(t), testTimeout) // loopback denied
	c, rec := guard.Record(base)
	if c.Timeout != base.Timeout || c.CheckRedirect == nil || base.Transport == c.Transport {
		t.Fatalf("Record's copy: timeout %v, redirect policy set %t, same transport %t", c.Timeout, c.CheckRedirect != nil, base.Transport == c.Transport)
	}
	resp, err := c.Get(allowed.URL)
	if resp != nil {
		resp.Body.Close()
	}
	var d *guard.DeniedError
	if !errors.As(err, &d) || rec.Denied() == nil || rec.Denied().Reason != guard.ReasonLoopback {
		t.Fatalf("err %v, recorded %v; want a loopback refusal recorded", err, rec.Denied())
	}
	if hits.Load() != 0 {
		t.Error("a denied request reached the server")
	}
	rec.Reset()
	open, _ := guard.Record(guard.NewClientWithPolicy(mustPolicy(t, "127.0.0.0/8"), testTimeout))
	openRec := open.Transport.(*guard.Recorder)
	if resp, err := open.Get(allowed.URL); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	if rec.Denied() != nil || openRec.Denied() != nil {
		t.Errorf("recorded %v and %v after Reset and an allowed request, want none", rec.Denied(), openRec.Denied())
	}
}
