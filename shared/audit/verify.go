package audit

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// stored is an entry item as read, with its sort key.
type stored struct {
	Entry
	SK string `dynamodbav:"sk"`
}

// List returns catalog id's entries in Seq order, as stored.
func (s *Store) List(ctx context.Context, id string) ([]Entry, error) {
	all, err := s.list(ctx, id)
	out := make([]Entry, len(all))
	for i, e := range all {
		out[i] = e.Entry
	}
	return out, err
}

func (s *Store) list(ctx context.Context, id string) ([]stored, error) {
	x, err := expression.NewBuilder().WithKeyCondition(
		expression.Key(PartitionKey).Equal(expression.Value(id)).And(expression.Key(SortKey).BeginsWith("e#"))).Build()
	if err != nil {
		return nil, err
	}
	var out []stored
	p := dynamodb.NewQueryPaginator(s.api, &dynamodb.QueryInput{
		TableName: aws.String(s.table), KeyConditionExpression: x.KeyCondition(),
		ExpressionAttributeNames: x.Names(), ExpressionAttributeValues: x.Values(), ConsistentRead: aws.Bool(true),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return out, fmt.Errorf("audit: list %q: %w", id, err)
		}
		var items []stored
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
			return out, fmt.Errorf("audit: list %q: %w", id, err)
		}
		out = append(out, items...)
	}
	return out, nil
}

// Problem is a break in a chain: the entry it concerns, and what.
type Problem struct {
	Seq    int64  `json:"seq"`
	Kind   string `json:"kind"` // ProblemDeleted or ProblemEdited
	Detail string `json:"detail"`
}

// Problem kinds.
const (
	ProblemDeleted = "deleted"
	ProblemEdited  = "edited"
)

// Report is what Verify found: how many entries, the last Seq the head
// names, and every break (none: the chain is whole).
type Report struct {
	Entries  int       `json:"entries"`
	Head     int64     `json:"head"`
	Problems []Problem `json:"problems"`
}

// OK reports whether the chain is whole.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// Verify reads catalog id's chain and checks it: Seqs 1 to the head's
// without a gap, each entry's Prev the Hash of the one before, each sort
// key its Seq's, and the head's Hash the last entry's.
func (s *Store) Verify(ctx context.Context, id string) (Report, error) {
	h, found, err := s.head(ctx, id)
	if err != nil {
		return Report{}, err
	}
	all, err := s.list(ctx, id)
	if err != nil {
		return Report{}, err
	}
	r := Report{Entries: len(all), Head: h.Seq}
	want, prev := int64(1), ""
	for _, e := range all {
		switch {
		case e.SK != entryKey(e.Seq):
			r.add(e.Seq, ProblemEdited, "its seq does not match its key %s", e.SK)
		case e.Seq > want:
			r.add(want, ProblemDeleted, "entries %d to %d are missing", want, e.Seq-1)
		case e.Prev != prev:
			r.add(e.Seq, ProblemEdited, "entry %d or the hash of it that entry %d holds was changed", e.Seq-1, e.Seq)
		}
		want, prev = e.Seq+1, Hash(e.Entry)
	}
	last := want - 1
	switch {
	case !found && len(all) > 0:
		r.add(last, ProblemDeleted, "the chain's head is missing")
	case h.Seq > last:
		r.add(last+1, ProblemDeleted, "entries %d to %d are missing", last+1, h.Seq)
	case h.Seq < last:
		r.add(h.Seq+1, ProblemEdited, "entries after %d were added outside the chain", h.Seq)
	case found && h.Hash != prev:
		r.add(last, ProblemEdited, "entry %d does not match the chain's head", last)
	}
	return r, nil
}

func (r *Report) add(seq int64, kind, format string, args ...any) {
	r.Problems = append(r.Problems, Problem{Seq: seq, Kind: kind, Detail: fmt.Sprintf(format, args...)})
}
