package audit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/shared/audit"
	"github.com/mcpfn/mcpfn/shared/awstest"
)

func newStore(t *testing.T) (*audit.Store, *dynamodb.Client, string) {
	t.Helper()
	client, table := awstest.NewTable(t, awstest.SharedMoto(t), "audit", audit.CreateTable)
	return audit.New(client, table), client, table
}

func appendN(t *testing.T, s *audit.Store, id string, n int) []audit.Entry {
	t.Helper()
	var out []audit.Entry
	for i := range n {
		e, err := s.Append(t.Context(), audit.Entry{CatalogID: id, Version: "v1", Tool: fmt.Sprintf("tool_%d", i),
			Decision: audit.Denied, Rule: "rule 0", ArgumentsSHA256: strings.Repeat("a", 64), By: "call"})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func verify(t *testing.T, s *audit.Store, id string) audit.Report {
	t.Helper()
	r, err := s.Verify(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func entryKey(id string, seq int) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		audit.PartitionKey: &types.AttributeValueMemberS{Value: id},
		audit.SortKey:      &types.AttributeValueMemberS{Value: fmt.Sprintf("e#%020d", seq)},
	}
}

// TestChainOverDynamo: appended entries chain (Seq 1 to n, each Prev the
// Hash of the one before), list in order and verify.
func TestChainOverDynamo(t *testing.T) {
	t.Parallel()
	s, _, _ := newStore(t)
	got := appendN(t, s, "cat", 5)
	listed, err := s.List(t.Context(), "cat")
	if err != nil || len(listed) != 5 {
		t.Fatalf("List = %d entries, %v", len(listed), err)
	}
	for i, e := range listed {
		if e != got[i] || e.Seq != int64(i+1) || (i > 0 && e.Prev != audit.Hash(listed[i-1])) || (i == 0 && e.Prev != "") {
			t.Errorf("entry %d = %+v, want %+v chained", i, e, got[i])
		}
	}
	if r := verify(t, s, "cat"); !r.OK() || r.Entries != 5 || r.Head != 5 {
		t.Errorf("Verify = %+v, want a whole chain of 5", r)
	}
	if r := verify(t, s, "other"); !r.OK() || r.Entries != 0 {
		t.Errorf("an empty chain: %+v", r)
	}
	if _, err := s.Append(t.Context(), audit.Entry{CatalogID: "cat"}); !errors.Is(err, audit.ErrInvalid) {
		t.Errorf("an entry without a decision: %v, want ErrInvalid", err)
	}
}

// TestVerifyFindsTampering: an edited entry, a deleted one, a deleted last
// one and a deleted head are each reported at the right Seq.
func TestVerifyFindsTampering(t *testing.T) {
	t.Parallel()
	s, client, table := newStore(t)
	for _, c := range []struct {
		name   string
		tamper func(id string) error
		seq    int64
		kind   string
	}{
		{"an edited decision", func(id string) error {
			_, err := client.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: entryKey(id, 2),
				UpdateExpression:          aws.String("SET decision = :d"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":d": &types.AttributeValueMemberS{Value: "allow"}}})
			return err
		}, 3, audit.ProblemEdited},
		{"an edited last entry", func(id string) error {
			_, err := client.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: entryKey(id, 4),
				UpdateExpression:          aws.String("SET #by = :b"),
				ExpressionAttributeNames:  map[string]string{"#by": "by"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":b": &types.AttributeValueMemberS{Value: "nobody"}}})
			return err
		}, 4, audit.ProblemEdited},
		{"a deleted entry", func(id string) error {
			_, err := client.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: entryKey(id, 2)})
			return err
		}, 2, audit.ProblemDeleted},
		{"a deleted last entry", func(id string) error {
			_, err := client.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: entryKey(id, 4)})
			return err
		}, 4, audit.ProblemDeleted},
	} {
		id := strings.ReplaceAll(c.name, " ", "-")
		appendN(t, s, id, 4)
		if err := c.tamper(id); err != nil {
			t.Fatal(err)
		}
		r := verify(t, s, id)
		if len(r.Problems) != 1 || r.Problems[0].Seq != c.seq || r.Problems[0].Kind != c.kind || r.Problems[0].Detail == "" {
			t.Errorf("%s: %+v, want one %s problem at %d", c.name, r.Problems, c.kind, c.seq)
		}
	}
}

// racer appends another entry to the chain right after the first head
// read of the store it wraps: that store's write must fail its condition
// and retry on the new head.
type racer struct {
	audit.DynamoAPI
	other *audit.Store
	done  bool
}

func (r *racer) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := r.DynamoAPI.GetItem(ctx, in, o...)
	if !r.done {
		r.done = true
		if _, aerr := r.other.Append(ctx, audit.Entry{CatalogID: "raced", Decision: audit.Asked, By: "other"}); aerr != nil {
			return nil, aerr
		}
	}
	return out, err
}

// TestAppendRetriesAfterAnotherWriter: two writers at once never fork
// the chain.
func TestAppendRetriesAfterAnotherWriter(t *testing.T) {
	t.Parallel()
	other, client, table := newStore(t)
	s := audit.New(&racer{DynamoAPI: client, other: other}, table)
	e, err := s.Append(t.Context(), audit.Entry{CatalogID: "raced", Decision: audit.Denied, By: "call"})
	if err != nil || e.Seq != 2 {
		t.Fatalf("Append = %+v, %v; want seq 2 after the other writer's 1", e, err)
	}
	if r := verify(t, s, "raced"); !r.OK() || r.Entries != 2 {
		t.Errorf("Verify = %+v, want a whole chain of 2", r)
	}
}
