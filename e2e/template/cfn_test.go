package template

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// doc is a CloudFormation template decoded into plain Go values, with the
// short-form intrinsics (!Ref, !GetAtt, !Sub, ...) turned into their long
// forms ({"Ref": x}, {"Fn::GetAtt": [r, a]}, ...).
type doc map[string]any

func loadTemplate(path string) (doc, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseTemplate(b)
}

func parseTemplate(b []byte) (doc, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(b, &n); err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	v, err := decodeNode(&n)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("parse template: top level is %T, want a mapping", v)
	}
	return doc(m), nil
}

func decodeNode(n *yaml.Node) (any, error) {
	var v any
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return nil, fmt.Errorf("line %d: want one document, got %d", n.Line, len(n.Content))
		}
		return decodeNode(n.Content[0])
	case yaml.AliasNode:
		return decodeNode(n.Alias)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			val, err := decodeNode(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = val
		}
		v = m
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			val, err := decodeNode(c)
			if err != nil {
				return nil, err
			}
			s = append(s, val)
		}
		v = s
	case yaml.ScalarNode:
		if isIntrinsic(n.Tag) {
			v = n.Value
			break
		}
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
	default:
		return nil, fmt.Errorf("line %d: unexpected YAML node kind %d", n.Line, n.Kind)
	}
	if !isIntrinsic(n.Tag) {
		return v, nil
	}
	return longForm(n, v)
}

// isIntrinsic reports whether tag is a CloudFormation short form such as
// !Ref, as opposed to a YAML core tag (!!str, !!int, ...).
func isIntrinsic(tag string) bool {
	return strings.HasPrefix(tag, "!") && !strings.HasPrefix(tag, "!!")
}

// longForm maps a short-form intrinsic to its long form.
func longForm(n *yaml.Node, v any) (any, error) {
	name := strings.TrimPrefix(n.Tag, "!")
	switch name {
	case "Ref", "Condition":
		return map[string]any{name: v}, nil
	case "GetAtt":
		if s, ok := v.(string); ok {
			res, attr, found := strings.Cut(s, ".")
			if !found {
				return nil, fmt.Errorf("line %d: !GetAtt %q has no attribute", n.Line, s)
			}
			return map[string]any{"Fn::GetAtt": []any{res, attr}}, nil
		}
		return map[string]any{"Fn::GetAtt": v}, nil
	default:
		return map[string]any{"Fn::" + name: v}, nil
	}
}

// path walks nested mappings; it returns nil when a key is missing.
func path(v any, keys ...string) any {
	if d, ok := v.(doc); ok {
		v = map[string]any(d)
	}
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func (d doc) resources(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	rs, _ := d["Resources"].(map[string]any)
	for name, r := range rs {
		rm, _ := r.(map[string]any)
		if rm["Type"] == typ {
			out[name] = rm
		}
	}
	return out
}

// bound selects which value a Number parameter contributes to a resolved
// expression: its default, or the largest value it accepts.
type bound int

const (
	atDefault bound = iota
	atMax
)

// resolve evaluates the intrinsics that budgets are written with: Ref to a
// parameter, Fn::FindInMap and Fn::Sub over parameters. It returns a string or
// a number; anything else is an error naming the expression.
func (d doc) resolve(v any, b bound) (any, error) {
	switch x := v.(type) {
	case string, int, float64, bool:
		return x, nil
	case map[string]any:
		if len(x) != 1 {
			break
		}
		if ref, ok := x["Ref"].(string); ok {
			return d.param(ref, b)
		}
		if args, ok := x["Fn::FindInMap"].([]any); ok && len(args) == 3 {
			keys := make([]string, 3)
			for i, a := range args {
				r, err := d.resolve(a, b)
				if err != nil {
					return nil, err
				}
				keys[i] = fmt.Sprint(r)
			}
			got := path(d["Mappings"], keys...)
			if got == nil {
				return nil, fmt.Errorf("FindInMap %v: no such entry", keys)
			}
			return got, nil
		}
		if s, ok := x["Fn::Sub"].(string); ok {
			var err error
			out := os.Expand(s, func(name string) string {
				r, rerr := d.param(name, b)
				if rerr != nil {
					err = rerr
					return ""
				}
				return fmt.Sprint(r)
			})
			return out, err
		}
	}
	return nil, fmt.Errorf("cannot resolve %v", v)
}

func (d doc) param(name string, b bound) (any, error) {
	p, ok := path(d["Parameters"], name).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("Ref %s: not a parameter", name)
	}
	if b == atMax && p["Type"] == "Number" {
		if p["MaxValue"] == nil {
			return nil, fmt.Errorf("parameter %s: a Number in a budget needs a MaxValue", name)
		}
		return p["MaxValue"], nil
	}
	if p["Default"] == nil {
		return nil, fmt.Errorf("parameter %s: no Default", name)
	}
	return p["Default"], nil
}

func (d doc) number(v any, b bound) (float64, error) {
	r, err := d.resolve(v, b)
	if err != nil {
		return 0, err
	}
	switch x := r.(type) {
	case int:
		return float64(x), nil
	case float64:
		return x, nil
	case string:
		f, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return 0, fmt.Errorf("%v resolves to %q, not a number", v, x)
		}
		return f, nil
	}
	return 0, fmt.Errorf("%v resolves to %T, not a number", v, r)
}

// functionProp reads a function property, falling back to Globals.Function.
func (d doc) functionProp(fn map[string]any, keys ...string) any {
	if v := path(fn, append([]string{"Properties"}, keys...)...); v != nil {
		return v
	}
	return path(d["Globals"], append([]string{"Function"}, keys...)...)
}

// refName returns the logical id a {"Ref": id} or {"Fn::GetAtt": [id, attr]}
// points at, with the attribute ("" for Ref).
func refName(v any) (id, attr string, ok bool) {
	m, isMap := v.(map[string]any)
	if !isMap || len(m) != 1 {
		return "", "", false
	}
	if s, isStr := m["Ref"].(string); isStr {
		return s, "", true
	}
	if a, isSeq := m["Fn::GetAtt"].([]any); isSeq && len(a) == 2 {
		id, _ := a[0].(string)
		attr, _ := a[1].(string)
		return id, attr, id != "" && attr != ""
	}
	return "", "", false
}
