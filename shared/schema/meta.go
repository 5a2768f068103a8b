package schema

import (
	"embed"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// metaFiles are the draft 2020-12 meta-schema and its vocabularies,
// copied unchanged from jsonschema-go's meta-schemas/draft2020-12.
//
//go:embed metaschema
var metaFiles embed.FS

// metaSchema is the draft 2020-12 meta-schema, resolved once.
var metaSchema = func() *jsonschema.Resolved {
	s, err := loadMeta(&url.URL{Scheme: "https", Host: "json-schema.org", Path: "/draft/2020-12/schema"})
	if err == nil {
		var r *jsonschema.Resolved
		if r, err = s.Resolve(&jsonschema.ResolveOptions{Loader: loadMeta}); err == nil {
			return r
		}
	}
	panic("schema: the embedded meta-schema does not resolve: " + err.Error())
}()

// loadMeta loads a meta-schema file by its $id; it reads only metaFiles.
func loadMeta(u *url.URL) (*jsonschema.Schema, error) {
	name, ok := strings.CutPrefix(u.String(), "https://json-schema.org/draft/2020-12/")
	if !ok {
		return nil, fmt.Errorf("%s is not a draft 2020-12 meta-schema", u)
	}
	b, err := metaFiles.ReadFile("metaschema/" + name + ".json")
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return &s, nil
}
