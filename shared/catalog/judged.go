package catalog

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/shared/mcp"
)

// attrJudged is the head's record of the rules that judged a version's
// schemas: a map of rules and version (docs/catalog.md).
const attrJudged = "schema_rules"

// judgedRecord is the head's attrJudged map.
type judgedRecord struct {
	Rules   string `dynamodbav:"rules"`
	Version string `dynamodbav:"version"`
}

// judgedHead is the head projected to what Judged reads.
type judgedHead struct {
	Version     string        `dynamodbav:"version"`
	ToolsExpire int64         `dynamodbav:"tools_expire_at"`
	Judged      *judgedRecord `dynamodbav:"schema_rules"`
}

// Judged is a stored version whose tools' schemas a discovery need not
// check again: Version's tools, every one accepted by the rules it was
// read for. The zero value (Version "") holds no tool.
type Judged struct {
	Version string
	defs    map[[nameKeyLen]byte][fieldHashLen]byte // name hash → fieldHash
}

// NewJudged returns the Judged of a version holding tools.
func NewJudged(version string, tools []mcp.Tool) Judged {
	j := Judged{Version: version, defs: make(map[[nameKeyLen]byte][fieldHashLen]byte, len(tools))}
	for _, t := range tools {
		j.defs[nameKey16(t.Name)] = fieldHash(t)
	}
	return j
}

// Unchanged reports whether j's version holds a tool named as t whose
// stored fields (name, description, schemas, title, annotations, meta)
// all equal t's, by their 16-byte SHA-256 field hash.
func (j Judged) Unchanged(t mcp.Tool) bool {
	f, ok := j.defs[nameKey16(t.Name)]
	return ok && f == fieldHash(t)
}

func nameKey16(name string) [nameKeyLen]byte {
	sum := sha256.Sum256([]byte(name))
	return [nameKeyLen]byte(sum[:nameKeyLen])
}

// Judged returns id's current version when the head records that rules
// judged its schemas (Discovery.SchemaRules), with its tools' field hashes from its
// manifest: one GetItem of the head, and one of the marker (a Query more
// past 300 kB of manifest) only when the record matches. Otherwise, or
// when the version is expired or being deleted, it returns the zero
// Judged and no error.
func (s *Dynamo) Judged(ctx context.Context, id, rules string) (Judged, error) {
	if err := ValidateID(id); err != nil {
		return Judged{}, err
	}
	e, err := expression.NewBuilder().WithProjection(expression.NamesList(
		name(attrVersion), name(attrToolsExpire), name(attrJudged))).Build()
	if err != nil {
		return Judged{}, fmt.Errorf("catalog: read the head of %q: %w", id, err)
	}
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(s.table),
		Key:                      headKey(id),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     e.Projection(),
		ExpressionAttributeNames: e.Names(),
	}, withinDeadline(ctx))
	if err != nil {
		return Judged{}, failed(ctx, "get "+strconv.Quote(id)+" "+HeadSortKey, err)
	}
	var h judgedHead
	if err := attributevalue.UnmarshalMap(out.Item, &h); err != nil {
		return Judged{}, fmt.Errorf("catalog: head of %q: %w", id, err)
	}
	if h.Version == "" || h.Judged == nil || h.Judged.Rules != rules || h.Judged.Version != h.Version ||
		(h.ToolsExpire != 0 && s.now().Unix() >= h.ToolsExpire) {
		return Judged{}, nil
	}
	m, ok, err := s.readManifest(ctx, id, h.Version)
	if err != nil || !ok {
		return Judged{}, err
	}
	j := Judged{Version: h.Version, defs: make(map[[nameKeyLen]byte][fieldHashLen]byte, len(m.tools))}
	for _, t := range m.tools {
		j.defs[t.name] = t.fields
	}
	return j, nil
}

// setJudged adds to u the record that rules judged version's schemas,
// or its removal when rules is empty.
func setJudged(u expression.UpdateBuilder, rules, version string) (expression.UpdateBuilder, error) {
	if rules == "" {
		return u.Remove(name(attrJudged)), nil
	}
	v, err := attributevalue.Marshal(judgedRecord{Rules: rules, Version: version})
	if err != nil {
		return u, fmt.Errorf("catalog: schema rules: %w", err)
	}
	return u.Set(name(attrJudged), expression.Value(v)), nil
}
