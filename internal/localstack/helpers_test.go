package localstack

import (
	"strings"
	"testing"
)

// startMoto starts a moto server for t and stops it when t ends.
func startMoto(t *testing.T) *Moto {
	t.Helper()
	m, err := StartMoto()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Stop(); err != nil {
			t.Error(err)
		}
	})
	return m
}

// startFunction starts cfg under the RIE for t, stops it when t ends and
// logs its output when t failed.
func startFunction(t *testing.T, cfg Config) *Function {
	t.Helper()
	f, err := StartFunction(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", f.name, strings.Join(f.Logs(), "\n"))
		}
	})
	return f
}
