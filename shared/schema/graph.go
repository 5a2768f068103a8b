package schema

import (
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// How a subschema applies to the instance its parent is applied to.
type applies int

const (
	inPlace  applies = iota // to the same instance: allOf, not, if, ...
	descends                // to a part of it: properties, items, ...
	unused                  // to nothing unless referenced: $defs, definitions
)

// A keyword that holds subschemas: one, a list of them (shape '['), or a
// map of them (shape '{').
type keyword struct {
	name  string
	shape byte // '1', '[' or '{'
	how   applies
}

// keywords are the keywords jsonschema-go reads subschemas from, in the
// order children visits them (TestKeywordsNameEverySchemaField).
var keywords = []keyword{
	{"$defs", '{', unused},
	{"definitions", '{', unused},
	{"dependencies", '{', inPlace},
	{"dependentSchemas", '{', inPlace},
	{"allOf", '[', inPlace},
	{"anyOf", '[', inPlace},
	{"oneOf", '[', inPlace},
	{"not", '1', inPlace},
	{"if", '1', inPlace},
	{"then", '1', inPlace},
	{"else", '1', inPlace},
	{"prefixItems", '[', descends},
	{"items", '1', descends}, // or '[' in draft-07 form
	{"additionalItems", '1', descends},
	{"contains", '1', descends},
	{"unevaluatedItems", '1', descends},
	{"properties", '{', descends},
	{"patternProperties", '{', descends},
	{"additionalProperties", '1', descends},
	{"propertyNames", '1', descends},
	{"unevaluatedProperties", '1', descends},
	{"contentSchema", '1', descends},
}

// isSchema reports whether v, decoded by encoding/json, can be a schema:
// an object or a boolean.
func isSchema(v any) bool {
	switch v.(type) {
	case map[string]any, bool:
		return true
	}
	return false
}

// children calls f with each subschema of s, the JSON Pointer segments
// that lead to it from s (unescaped), and how it applies.
func children(s map[string]any, f func(c any, how applies, segs ...string)) {
	for _, k := range keywords {
		v, ok := s[k.name]
		if !ok {
			continue
		}
		switch v := v.(type) {
		case []any:
			if k.shape == '[' || k.name == "items" {
				for i, c := range v {
					if isSchema(c) {
						f(c, k.how, k.name, strconv.Itoa(i))
					}
				}
			}
		case map[string]any:
			if k.shape == '{' {
				for _, key := range slices.Sorted(maps.Keys(v)) {
					if isSchema(v[key]) {
						f(v[key], k.how, k.name, key)
					}
				}
			} else if k.shape == '1' {
				f(v, k.how, k.name)
			}
		case bool:
			if k.shape == '1' {
				f(v, k.how, k.name)
			}
		}
	}
}

// node is what index learns about one schema, known by its path: its JSON
// Pointer from the root, escaped ("" for the root).
type node struct {
	schema any    // map[string]any or bool
	base   string // the path of the nearest enclosing schema with an $id, or of the root
	next   []string
}

// graph holds every schema under a root and the edges along which a
// validator stays on the same instance: in-place applicators and
// references.
type graph struct {
	nodes   map[string]*node
	anchors map[string]map[string]string // base path → anchor → path
	dynamic map[string][]string          // $dynamicAnchor → paths
	refs    int                          // how many $ref and $dynamicRef
}

// index builds the graph of root, a value decoded by encoding/json. It
// refuses a reference that is not a fragment (remote-ref) or does not
// resolve (dangling-ref), and a pattern that Go's regexp does not compile,
// an $id or an anchor declared twice (compile; jsonschema-go lets a second
// anchor pass, TestJSONSchemaGoAcceptsDuplicateAnchors).
func index(root any) (*graph, error) {
	x := &indexer{
		graph: &graph{
			nodes:   map[string]*node{},
			anchors: map[string]map[string]string{},
			dynamic: map[string][]string{},
		},
		ids: map[string]bool{},
	}
	if err := x.walk(root, "", "", &url.URL{}); err != nil {
		return nil, err
	}
	if err := x.link(); err != nil {
		return nil, err
	}
	return x.graph, nil
}

// indexer is index's state while it walks: the graph so far and the
// resolved $id URIs seen.
type indexer struct {
	*graph
	ids map[string]bool
}

// walk records the schema v at path and everything under it.
func (x *indexer) walk(v any, path, base string, baseURI *url.URL) error {
	x.nodes[path] = &node{schema: v, base: base}
	s, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	base, baseURI, err := x.declareID(s, path, base, baseURI)
	if err != nil {
		return err
	}
	if err := x.declareAnchors(s, path, base); err != nil {
		return err
	}
	if err := compilePatterns(s, path); err != nil {
		return err
	}
	children(s, func(c any, how applies, segs ...string) {
		if err != nil {
			return
		}
		p := path
		for _, seg := range segs {
			p += "/" + escape(seg)
		}
		if err = x.walk(c, p, base, baseURI); err == nil && how == inPlace {
			x.nodes[path].next = append(x.nodes[path].next, p)
		}
	})
	return err
}

// declareID makes the schema at path a new base when it has an $id, and
// returns the base its subschemas resolve against.
func (x *indexer) declareID(s map[string]any, path, base string, baseURI *url.URL) (string, *url.URL, error) {
	id, _ := s["$id"].(string)
	if id == "" {
		return base, baseURI, nil
	}
	u, err := url.Parse(id)
	if err != nil {
		return "", nil, refuse(ruleCompile, "$id %q at %s: %s", id, pointer(path), err)
	}
	if u = baseURI.ResolveReference(u); x.ids[u.String()] {
		return "", nil, refuse(ruleCompile, "$id %q at %s names a schema named before", id, pointer(path))
	}
	x.ids[u.String()] = true
	x.nodes[path].base = path
	return path, u, nil
}

// declareAnchors records the schema's $anchor and $dynamicAnchor within
// its base, refusing one declared twice.
func (x *indexer) declareAnchors(s map[string]any, path, base string) error {
	for _, k := range []string{"$anchor", "$dynamicAnchor"} {
		a, _ := s[k].(string)
		if a == "" {
			continue
		}
		if x.anchors[base] == nil {
			x.anchors[base] = map[string]string{}
		}
		if at, ok := x.anchors[base][a]; ok && at != path {
			return refuse(ruleCompile, "anchor %q at %s is declared before in the same resource", a, pointer(path))
		}
		x.anchors[base][a] = path
		if k == "$dynamicAnchor" {
			x.dynamic[a] = append(x.dynamic[a], path)
		}
	}
	return nil
}

// compilePatterns refuses a pattern or patternProperties key that Go's
// regexp does not compile: jsonschema-go compiles these with it, and so
// does Check for schemas it does not hand to jsonschema-go.
func compilePatterns(s map[string]any, path string) error {
	if p, ok := s["pattern"].(string); ok {
		if err := compiles(p); err != nil {
			return refuse(ruleCompile, "pattern at %s: %s", pointer(path), err)
		}
	}
	pp, _ := s["patternProperties"].(map[string]any)
	for _, p := range slices.Sorted(maps.Keys(pp)) {
		if err := compiles(p); err != nil {
			return refuse(ruleCompile, "patternProperties at %s: %s", pointer(path), err)
		}
	}
	return nil
}

// link adds each $ref and $dynamicRef as an edge, in path order so the
// reference named in a refusal is the same every time.
func (x *indexer) link() error {
	for _, path := range slices.Sorted(maps.Keys(x.nodes)) {
		n := x.nodes[path]
		s, _ := n.schema.(map[string]any)
		for _, k := range []string{"$ref", "$dynamicRef"} {
			ref, _ := s[k].(string)
			if ref == "" {
				continue
			}
			x.refs++
			t, frag, err := x.target(path, ref)
			if err != nil {
				return err
			}
			n.next = append(n.next, t)
			if k == "$dynamicRef" && frag != "" && !strings.HasPrefix(frag, "/") {
				// At validation time a $dynamicRef may land on any schema
				// with its anchor: follow them all.
				n.next = append(n.next, x.dynamic[frag]...)
			}
		}
	}
	return nil
}

// target returns the path of the schema that ref, held by the schema at
// path, refers to, as jsonschema-go resolves it: a JSON Pointer or an
// anchor within the base of that schema. It also returns the fragment.
func (g *graph) target(path, ref string) (string, string, error) {
	if !strings.HasPrefix(ref, "#") {
		return "", "", refuse(ruleRemote, "%q at %s is not a fragment (\"#…\"); it is not fetched", ref, pointer(path))
	}
	u, err := url.Parse(ref)
	if err != nil {
		return "", "", refuse(ruleCompile, "$ref %q at %s: %s", ref, pointer(path), err)
	}
	base := g.nodes[path].base
	frag := u.Fragment
	t, ok := "", false
	if frag == "" || strings.HasPrefix(frag, "/") {
		t = base
		if frag != "" {
			for _, seg := range strings.Split(frag[1:], "/") {
				t += "/" + escape(unescape(seg))
			}
		}
		_, ok = g.nodes[t]
	} else {
		t, ok = g.anchors[base][frag]
	}
	if !ok {
		return "", "", refuse(ruleDangling, "%q at %s refers to no schema", ref, pointer(path))
	}
	return t, frag, nil
}

// acyclic refuses a cycle of in-place applicators and references: a
// validator following it would never return (TestJSONSchemaGoLoopsOnCyclicRef).
func (g *graph) acyclic() error {
	const (
		unseen = iota
		open
		done
	)
	state := make(map[string]int, len(g.nodes))
	var visit func(p string) (string, bool)
	visit = func(p string) (string, bool) {
		state[p] = open
		for _, t := range g.nodes[p].next {
			switch state[t] {
			case open:
				return t, true
			case unseen:
				if c, ok := visit(t); ok {
					return c, true
				}
			}
		}
		state[p] = done
		return "", false
	}
	// In path order, so the schema named is the same every time.
	for _, p := range slices.Sorted(maps.Keys(g.nodes)) {
		if state[p] == unseen {
			if c, ok := visit(p); ok {
				return refuse(ruleCyclic, "the schema at %s reaches itself through $ref without descending into a property or item", pointer(c))
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
