package catalog

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestChangesEncodingRoundTrips(t *testing.T) {
	many := make([]string, 2000)
	for i := range many {
		many[i] = fmt.Sprintf("tool-%04d-%s", i, "\xff.name") // any bytes, as compressed tools may have
	}
	for name, c := range map[string]*Changes{
		"empty": boundChanges(nil, nil, nil),
		"some":  boundChanges([]string{"b", "a"}, []string{"c"}, nil),
		"cut":   boundChanges(many, many[:10], many[5:]),
	} {
		got, err := decodeChanges(encodeChanges(c))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(c, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	if _, err := decodeChanges([]byte{1, 0, 0, 1}); err == nil {
		t.Error("truncated changes decoded")
	}
}
