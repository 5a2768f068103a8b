package vault

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/strictjson"
)

// maxSecretDepth bounds a vault's nesting; the format itself is 4 deep.
const maxSecretDepth = 16

// The JSON shapes, exactly as stored: one struct per credential type,
// decoded by strictjson (names case for case, no unknown or repeated name).
// A pointer marks a field whose presence matters.
type (
	docJSON struct {
		Credentials *[]json.RawMessage `json:"credentials"`
	}
	staticJSON struct {
		Type      string `json:"type,omitempty"`
		ServerURL string `json:"server_url,omitempty"`
		Token     string `json:"token,omitempty"`
	}
	oauthJSON struct {
		Type         string       `json:"type,omitempty"`
		ServerURL    string       `json:"server_url,omitempty"`
		AccessToken  string       `json:"access_token,omitempty"`
		ExpiresAt    *string      `json:"expires_at,omitempty"`
		Refresh      *refreshJSON `json:"refresh,omitempty"`
		RefreshLease *leaseJSON   `json:"refresh_lease,omitempty"`
		DeadGrant    *deadJSON    `json:"dead_grant,omitempty"`
	}
	refreshJSON struct {
		TokenEndpoint     string          `json:"token_endpoint,omitempty"`
		ClientID          string          `json:"client_id,omitempty"`
		RefreshToken      string          `json:"refresh_token,omitempty"`
		Scope             string          `json:"scope,omitempty"`
		Resource          string          `json:"resource,omitempty"`
		TokenEndpointAuth *secretAuthJSON `json:"token_endpoint_auth,omitempty"`
	}
	secretAuthJSON struct {
		Type         string  `json:"type,omitempty"`
		ClientSecret *string `json:"client_secret,omitempty"`
	}
	leaseJSON struct {
		Holder    string  `json:"holder,omitempty"`
		ExpiresAt *string `json:"expires_at,omitempty"`
	}
	deadJSON struct {
		Error              string  `json:"error,omitempty"`
		At                 *string `json:"at,omitempty"`
		RefreshTokenSHA256 string  `json:"refresh_token_sha256,omitempty"`
	}
	clientJSON struct {
		Type              string       `json:"type,omitempty"`
		ServerURL         string       `json:"server_url,omitempty"`
		ClientID          string       `json:"client_id,omitempty"`
		ClientSecret      string       `json:"client_secret,omitempty"`
		Scope             string       `json:"scope,omitempty"`
		Resource          string       `json:"resource,omitempty"`
		TokenEndpoint     string       `json:"token_endpoint,omitempty"`
		TokenEndpointAuth *keyAuthJSON `json:"token_endpoint_auth,omitempty"`
	}
	keyAuthJSON struct {
		Type       string  `json:"type,omitempty"`
		PrivateKey *string `json:"private_key,omitempty"`
		KeyID      *string `json:"key_id,omitempty"`
	}
)

// shape is one credential type's stored form: it checks itself and
// becomes a Credential (ServerURL not yet normalised).
type shape interface {
	serverURL() string
	credential() (Credential, error)
}

// shapeOf returns an empty shape for a credential type; "" is static_bearer.
func shapeOf(typ string) shape {
	switch typ {
	case TypeStaticBearer, "":
		return &staticJSON{}
	case TypeMCPOAuth:
		return &oauthJSON{}
	case TypeClientCredentials:
		return &clientJSON{}
	}
	return nil
}

// parseDoc splits a vault's value into its raw credentials and parses them.
func parseDoc(data []byte) ([]json.RawMessage, []Credential, error) {
	if len(data) > MaxSecretBytes {
		return nil, nil, fmt.Errorf("%w: %d bytes, at most %d", ErrVaultMalformed, len(data), MaxSecretBytes)
	}
	var doc docJSON
	if err := decodeStrict(data, "", &doc); err != nil {
		return nil, nil, err
	}
	if doc.Credentials == nil {
		return nil, nil, fmt.Errorf("%w: no \"credentials\" array", ErrVaultMalformed)
	}
	creds := make([]Credential, 0, len(*doc.Credentials))
	for i, raw := range *doc.Credentials {
		c, err := parseCredential(raw, fmt.Sprintf("credential %d: ", i))
		if err != nil {
			return nil, nil, err
		}
		creds = append(creds, c)
	}
	return *doc.Credentials, creds, nil
}

// parseCredential decodes one credential into the shape its type selects.
func parseCredential(raw []byte, where string) (Credential, error) {
	var probe struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &probe) // a bad shape is reported by decodeStrict
	sh := shapeOf(probe.Type)
	if sh == nil {
		return Credential{}, fmt.Errorf("%w: %stype must be %s, %s or %s", ErrVaultMalformed, where, TypeStaticBearer, TypeMCPOAuth, TypeClientCredentials)
	}
	if err := decodeStrict(raw, where, sh); err != nil {
		return Credential{}, err
	}
	if sh.serverURL() == "" {
		return Credential{}, fmt.Errorf("%w: %sno server_url", ErrVaultMalformed, where)
	}
	norm, err := NormalizeURL(sh.serverURL())
	if err != nil {
		return Credential{}, fmt.Errorf("%w: %sserver_url: %w", ErrVaultMalformed, where, err)
	}
	c, err := sh.credential()
	if err != nil {
		return Credential{}, fmt.Errorf("%w: %s%w", ErrVaultMalformed, where, err)
	}
	c.ServerURL = norm
	return c, nil
}

// decodeStrict decodes raw into v with strictjson; where prefixes the
// messages, which never quote a value and quote only plain names.
func decodeStrict(raw []byte, where string, v any) error {
	err := strictjson.Decode(raw, v, strictjson.Limits{MaxBytes: MaxSecretBytes, MaxDepth: maxSecretDepth})
	var se *strictjson.Error
	if !errors.As(err, &se) {
		return err
	}
	parent := blocks(se.Ptr)
	var msg string
	switch se.Kind {
	case strictjson.Unknown:
		msg = fmt.Sprintf("%sunknown field %s (allowed: %s)", parent, quoteKey(se.Name), strings.Join(namesAt(reflect.TypeOf(v), se.Path), ", "))
	case strictjson.Duplicate:
		msg = fmt.Sprintf("%sfield %s given twice", parent, quoteKey(se.Name))
	case strictjson.Syntax:
		msg = fmt.Sprintf("not JSON (syntax error at byte %d)", se.Offset)
	case strictjson.Truncated:
		msg = "empty or incomplete JSON"
	case strictjson.Trailing:
		msg = "data after the JSON object"
	case strictjson.NotObject:
		msg = "not a credentials object"
	case strictjson.Type:
		msg = fmt.Sprintf("field %q is %s, want %s", se.Path, se.Got, se.Want)
	default:
		msg = se.Error()
	}
	return fmt.Errorf("%w: %s%s", ErrVaultMalformed, where, msg)
}

// blocks names the credential and blocks that hold the member at ptr, as
// "credential 1: refresh: ".
func blocks(ptr string) string {
	toks := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	var b strings.Builder
	for i := 0; i < len(toks)-1; i++ {
		if toks[i] == "credentials" && i+1 < len(toks)-1 {
			b.WriteString("credential " + toks[i+1] + ": ")
			i++
			continue
		}
		b.WriteString(quoteName(toks[i]) + ": ")
	}
	return b.String()
}

// quoteName is a block name as a message shows it: a plain name as is.
func quoteName(k string) string {
	if q := quoteKey(k); q != "(name not shown)" {
		return k
	}
	return "(name not shown)"
}

// namesAt lists the json names of the struct the member at path (dotted,
// its last name the unknown one) belongs to.
func namesAt(t reflect.Type, path string) []string {
	names := strings.Split(path, ".")
	for _, n := range names[:len(names)-1] {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		for f := range t.Fields() {
			if jsonName(f) == n {
				t = f.Type
				break
			}
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for f := range t.Fields() {
		out = append(out, jsonName(f))
	}
	slices.Sort(out)
	return out
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// quoteKey quotes a short plain field name; any other is not repeated.
func quoteKey(k string) string {
	if len(k) <= 32 && strings.Trim(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_") == "" {
		return fmt.Sprintf("%q", k)
	}
	return "(name not shown)"
}

func parseTime(p *string) (time.Time, error) {
	if p == nil {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, *p)
	if err != nil {
		return time.Time{}, errors.New("not an RFC 3339 time")
	}
	return t, nil
}

func usableURL(raw string) bool {
	_, err := guard.CheckURL(raw, true)
	return err == nil
}
