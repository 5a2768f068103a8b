package strictjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type inner struct {
	Token string `json:"token"`
}

type outer struct {
	Name  string `json:"name"`
	Inner *inner `json:"inner,omitempty"`
	Count int    `json:"count,omitempty"`
}

var limits = Limits{MaxBytes: 64, MaxDepth: 3}

func TestDecodeKinds(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Error // zero Kind: success
	}{
		{name: "exact", body: `{"name":"a","inner":{"token":"t"}}`},
		{name: "over the size", body: `{"name":"` + strings.Repeat("a", 60) + `"}`, want: Error{Kind: Size, Size: 71, Limit: 64}},
		{name: "array", body: `[]`, want: Error{Kind: NotObject}},
		{name: "malformed non-object", body: `nul`, want: Error{Kind: NotObject}},
		{name: "at the depth", body: `{"inner":{"token":[]}}`, want: Error{Kind: Type, Field: "inner", Path: "inner.token", Ptr: "/inner/token", Offset: 18, Want: "string", Got: "array"}},
		{name: "past the depth", body: `{"inner":{"token":[[]]}}`, want: Error{Kind: Depth, Field: "inner", Ptr: "/inner/token/0", Limit: 3, Offset: 19}},
		{name: "nested case variant", body: `{"inner":{"Token":"t"}}`, want: Error{Kind: Unknown, Field: "inner", Path: "inner.Token", Ptr: "/inner/Token", Name: "Token", Offset: 10}},
		{name: "nested duplicate", body: `{"inner":{"token":"t","token":"u"}}`, want: Error{Kind: Duplicate, Field: "inner", Path: "inner.token", Ptr: "/inner/token", Name: "token", Offset: 22}},
		{name: "number a numeric field cannot hold", body: `{"count":1.5}`, want: Error{Kind: Type, Field: "count", Path: "count", Ptr: "/count", Offset: 9, Want: "int", Got: "number 1.5"}},
		{name: "trailing", body: `{"name":"a"} x`, want: Error{Kind: Trailing, Offset: 13}},
		{name: "truncated", body: `{"name":"a"`, want: Error{Kind: Truncated, Offset: 11}},
		{name: "lone surrogate in a nested key", body: `{"inner":{"\udc00":1}}`, want: Error{Kind: Surrogate, Field: "inner", Path: "inner", Ptr: "/inner", Offset: 11}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got outer
			err := Decode([]byte(tt.body), &got, limits)
			if tt.want.Kind == 0 {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Decode error = %v, want *Error", err)
			}
			if diff := cmp.Diff(tt.want, *e); diff != "" {
				t.Errorf("Decode error (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzDecode: whatever Decode accepts, encoding/json reads the same way,
// and every refusal is an *Error.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"name":"a"}`, `{"inner":{"token":"t"}}`, `{"name":"\ud800"}`, `{"count":1e3}`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got outer
		err := Decode(data, &got, Limits{MaxBytes: 1 << 10, MaxDepth: 8})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Decode error %v is no *Error", err)
			}
			return
		}
		var want outer
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("Decode accepted %q, encoding/json refuses it: %v", data, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Decode(%q) (-encoding/json +Decode):\n%s", data, diff)
		}
	})
}
