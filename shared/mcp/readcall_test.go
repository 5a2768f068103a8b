package mcp

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// refCall decodes as encoding/json does, which also matches a key that
// differs from "id" or "method" in case only; folded says the body has
// such a key, which readCall, like the SDK, does not match.
func refCall(body []byte) (id []byte, method string, ok, folded bool) {
	var keys map[string]json.RawMessage
	if json.Unmarshal(body, &keys) == nil {
		for k := range keys {
			if k != "id" && k != "method" && (strings.EqualFold(k, "id") || strings.EqualFold(k, "method") || !isASCII(k)) {
				folded = true
			}
		}
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &m) != nil {
		return nil, "", false, folded
	}
	return m.ID, m.Method, true, folded
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func FuzzReadCall(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"a","result":{}}`,
		`{"method":"a","method":null}`,
		`{"method":"a","METHOD":"b"}`,
		`{"Method":"x","ID":7}`,
		`{"id":1,"id":2,"method":5}`,
		`{"m\u0065thod":"esc","id":null}`,
		`{"method":"caf\u00e9","id":"x"}`,
		"{\"meth\u212aod\":\"kelvin\"}",
		`{"ſd":1}`,
		`{"ıd":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		id, method, ok := readCall(body)
		wantID, wantMethod, wantOK, folded := refCall(body)
		if folded {
			return
		}
		if ok != wantOK || method != wantMethod || idKey(id) != idKey(wantID) {
			t.Errorf("readCall(%q) = %q, %q, %v; want %q, %q, %v", body, id, method, ok, wantID, wantMethod, wantOK)
		}
	})
}

// TestReadCallMatchesKeysExactly: a key that encoding/json would match
// case-insensitively is not "id" or "method" to readCall, as to the SDK.
func TestReadCallMatchesKeysExactly(t *testing.T) {
	for _, tc := range []struct {
		body       string
		id, method string
	}{
		{`{"Method":"x","ID":7}`, "", ""},
		{`{"METHOD":"x","id":7}`, "7", ""},
		{`{"ıd":7,"method":"x"}`, "", "x"}, // dotless i: encoding/json folds it to I
	} {
		id, method, ok := readCall([]byte(tc.body))
		if !ok || string(id) != tc.id || method != tc.method {
			t.Errorf("readCall(%s) = %q, %q, %v; want %q, %q, true", tc.body, id, method, ok, tc.id, tc.method)
		}
	}
}

// refIDKey is idKey without its fast path for integers.
func refIDKey(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return ""
		}
		return "s:" + s
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != float64(int64(f)) {
		return "x:" + string(raw)
	}
	return "n:" + strconv.FormatInt(int64(f), 10)
}

func FuzzIDKey(f *testing.F) {
	for _, s := range []string{"0", "-0", "1", "-1", "007", "10", "123456789012345", "1234567890123456", "-123456789012345",
		"9007199254740993", "1.0", "1e2", "-", "", " 7 ", "null", `"7"`, "1.5", "0.0", "-00", "1a"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if got, want := idKey(raw), refIDKey(raw); got != want {
			t.Errorf("idKey(%q) = %q, want %q", raw, got, want)
		}
	})
}
