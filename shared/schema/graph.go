package schema

import (
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// How a subschema applies to the instance its parent is applied to.
type applies int

const (
	inPlace  applies = iota // to the same instance: allOf, not, if, ...
	descends                // to a part of it: properties, items, ...
	unused                  // to nothing unless referenced: $defs, definitions
)

// children calls f with each subschema of s, the JSON Pointer segments
// that lead to it from s, and how it applies. It names every field of
// jsonschema.Schema that holds a schema (TestChildrenNamesEverySchemaField).
func children(s *jsonschema.Schema, f func(c *jsonschema.Schema, how applies, segs ...string)) {
	one := func(key string, c *jsonschema.Schema, how applies) {
		if c != nil {
			f(c, how, key)
		}
	}
	list := func(key string, cs []*jsonschema.Schema, how applies) {
		for i, c := range cs {
			f(c, how, key, strconv.Itoa(i))
		}
	}
	dict := func(key string, m map[string]*jsonschema.Schema, how applies) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			f(m[k], how, key, k)
		}
	}
	dict("$defs", s.Defs, unused)
	dict("definitions", s.Definitions, unused)
	dict("dependencies", s.DependencySchemas, inPlace)
	dict("dependentSchemas", s.DependentSchemas, inPlace)
	list("allOf", s.AllOf, inPlace)
	list("anyOf", s.AnyOf, inPlace)
	list("oneOf", s.OneOf, inPlace)
	one("not", s.Not, inPlace)
	one("if", s.If, inPlace)
	one("then", s.Then, inPlace)
	one("else", s.Else, inPlace)
	list("prefixItems", s.PrefixItems, descends)
	one("items", s.Items, descends)
	list("items", s.ItemsArray, descends)
	one("additionalItems", s.AdditionalItems, descends)
	one("contains", s.Contains, descends)
	one("unevaluatedItems", s.UnevaluatedItems, descends)
	dict("properties", s.Properties, descends)
	dict("patternProperties", s.PatternProperties, descends)
	one("additionalProperties", s.AdditionalProperties, descends)
	one("propertyNames", s.PropertyNames, descends)
	one("unevaluatedProperties", s.UnevaluatedProperties, descends)
	one("contentSchema", s.ContentSchema, descends)
}

// node is what index learns about one schema.
type node struct {
	path string             // JSON Pointer from the root, escaped
	base *jsonschema.Schema // the nearest enclosing schema with an $id, or the root
	next []*jsonschema.Schema
}

// graph holds every schema under a root and the edges along which a
// validator stays on the same instance: in-place applicators and
// references.
type graph struct {
	root    *jsonschema.Schema
	nodes   map[*jsonschema.Schema]*node
	byPath  map[string]*jsonschema.Schema
	anchors map[*jsonschema.Schema]map[string]*jsonschema.Schema // per base
	dynamic map[string][]*jsonschema.Schema                      // by $dynamicAnchor
}

// index builds the graph of root, refusing a reference that is not a
// fragment (remote-ref), does not resolve (dangling-ref), or an $id or
// anchor declared twice (compile; jsonschema-go lets a second anchor pass,
// TestJSONSchemaGoAcceptsDuplicateAnchors).
func index(root *jsonschema.Schema) (*graph, error) {
	g := &graph{
		root:    root,
		nodes:   map[*jsonschema.Schema]*node{},
		byPath:  map[string]*jsonschema.Schema{},
		anchors: map[*jsonschema.Schema]map[string]*jsonschema.Schema{},
		dynamic: map[string][]*jsonschema.Schema{},
	}
	ids := map[string]bool{}
	var walk func(s, base *jsonschema.Schema, baseURI *url.URL, path string) error
	walk = func(s, base *jsonschema.Schema, baseURI *url.URL, path string) error {
		if s.ID != "" {
			u, err := url.Parse(s.ID)
			if err != nil {
				return refuse(ruleCompile, "$id %q at %s: %s", s.ID, pointer(path), err)
			}
			u = baseURI.ResolveReference(u)
			if ids[u.String()] {
				return refuse(ruleCompile, "$id %q at %s names a schema named before", s.ID, pointer(path))
			}
			ids[u.String()] = true
			base, baseURI = s, u
		}
		g.nodes[s] = &node{path: path, base: base}
		g.byPath[path] = s
		for _, a := range []string{s.Anchor, s.DynamicAnchor} {
			if a != "" {
				if g.anchors[base] == nil {
					g.anchors[base] = map[string]*jsonschema.Schema{}
				}
				if g.anchors[base][a] != nil && g.anchors[base][a] != s {
					return refuse(ruleCompile, "anchor %q at %s is declared before in the same resource", a, pointer(path))
				}
				g.anchors[base][a] = s
			}
		}
		if s.DynamicAnchor != "" {
			g.dynamic[s.DynamicAnchor] = append(g.dynamic[s.DynamicAnchor], s)
		}
		var err error
		children(s, func(c *jsonschema.Schema, how applies, segs ...string) {
			if err != nil {
				return
			}
			p := path
			for _, seg := range segs {
				p += "/" + escape(seg)
			}
			if err = walk(c, base, baseURI, p); err == nil && how == inPlace {
				g.nodes[s].next = append(g.nodes[s].next, c)
			}
		})
		return err
	}
	if err := walk(root, root, &url.URL{}, ""); err != nil {
		return nil, err
	}
	// In path order, so the reference named is the same every time.
	for _, p := range slices.Sorted(maps.Keys(g.byPath)) {
		s := g.byPath[p]
		n := g.nodes[s]
		for _, ref := range []string{s.Ref, s.DynamicRef} {
			if ref == "" {
				continue
			}
			t, err := g.target(s, ref)
			if err != nil {
				return nil, err
			}
			n.next = append(n.next, t)
			if ref == s.DynamicRef {
				// At validation time a $dynamicRef may land on any schema
				// with its anchor: follow them all.
				if u, _ := url.Parse(ref); !strings.HasPrefix(u.Fragment, "/") {
					n.next = append(n.next, g.dynamic[u.Fragment]...)
				}
			}
		}
	}
	return g, nil
}

// target returns the schema ref, held by s, refers to, as jsonschema-go
// resolves it: a JSON Pointer or an anchor within the base of s.
func (g *graph) target(s *jsonschema.Schema, ref string) (*jsonschema.Schema, error) {
	at := pointer(g.nodes[s].path)
	if !strings.HasPrefix(ref, "#") {
		return nil, refuse(ruleRemote, "%q at %s is not a fragment (\"#…\"); it is not fetched", ref, at)
	}
	u, err := url.Parse(ref)
	if err != nil {
		return nil, refuse(ruleCompile, "$ref %q at %s: %s", ref, at, err)
	}
	base := g.nodes[s].base
	var t *jsonschema.Schema
	if frag := u.Fragment; frag == "" || strings.HasPrefix(frag, "/") {
		p := g.nodes[base].path
		if frag != "" {
			for _, seg := range strings.Split(frag[1:], "/") {
				p += "/" + escape(unescape(seg))
			}
		}
		t = g.byPath[p]
	} else {
		t = g.anchors[base][frag]
	}
	if t == nil {
		return nil, refuse(ruleDangling, "%q at %s refers to no schema", ref, at)
	}
	return t, nil
}

// acyclic refuses a cycle of in-place applicators and references: a
// validator following it would never return.
func (g *graph) acyclic() error {
	const (
		unseen = iota
		open
		done
	)
	state := make(map[*jsonschema.Schema]int, len(g.nodes))
	var visit func(s *jsonschema.Schema) *jsonschema.Schema
	visit = func(s *jsonschema.Schema) *jsonschema.Schema {
		state[s] = open
		for _, t := range g.nodes[s].next {
			switch state[t] {
			case open:
				return t
			case unseen:
				if c := visit(t); c != nil {
					return c
				}
			}
		}
		state[s] = done
		return nil
	}
	// Visit in path order, so the schema named is the same every time.
	for _, p := range slices.Sorted(maps.Keys(g.byPath)) {
		if s := g.byPath[p]; state[s] == unseen {
			if c := visit(s); c != nil {
				return refuse(ruleCyclic, "the schema at %s reaches itself through $ref without descending into a property or item", pointer(g.nodes[c].path))
			}
		}
	}
	return nil
}

// pointer returns path as a URI fragment, for messages.
func pointer(path string) string { return "#" + path }

var (
	escaper   = strings.NewReplacer("~", "~0", "/", "~1")
	unescaper = strings.NewReplacer("~1", "/", "~0", "~")
)

// escape and unescape convert a JSON Pointer segment (RFC 6901).
func escape(seg string) string   { return escaper.Replace(seg) }
func unescape(seg string) string { return unescaper.Replace(seg) }
