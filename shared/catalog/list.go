package catalog

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ListAPI is the part of *dynamodb.Client List and ReadSummary use.
type ListAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

var _ ListAPI = (*dynamodb.Client)(nil)

// Summary is one catalog's head: what an operator asks first. Version is
// empty and ToolCount 0 when only failures are recorded. The schedule
// fields are zero when the catalog is off the schedule; Failures and
// RetryAfter describe the current failure streak (shared/schedule), zero
// when there is none. Summary carries no server URL.
type Summary struct {
	ID              string
	Version         string
	ToolCount       int
	DiscoveredAt    time.Time
	CheckedAt       time.Time
	LastFailure     *Failure
	RefreshInterval time.Duration
	NextDue         time.Time
	Failures        int
	RetryAfter      time.Time
}

// summaryAttributes are the head attributes a Summary reads; nothing else
// of the head (tool indexes, the server's URL) is fetched.
var summaryAttributes = []string{
	PartitionKey, attrVersion, attrToolCount, attrDiscoveredAt, attrCheckedAt, attrFailure,
	IntervalAttribute, NextDueAttribute, FailuresAttribute, RetryAfterAttribute,
}

// projection is summaryAttributes as a ProjectionExpression with its
// attribute names.
func projection() (string, map[string]string) {
	names := make(map[string]string, len(summaryAttributes)+1)
	refs := make([]string, len(summaryAttributes))
	for i, a := range summaryAttributes {
		ref := "#a" + strconv.Itoa(i)
		names[ref], refs[i] = a, ref
	}
	return strings.Join(refs, ", "), names
}

// List calls fn with the Summary of every catalog in table, in no
// particular order, until fn returns an error, which List returns. It
// pages through one Scan that returns head items only; its cost is a read
// of the whole table, so it is an operator's tool, not a request path.
// SDK errors (a missing table, an unreachable endpoint) come back wrapped.
func List(ctx context.Context, api ListAPI, table string, fn func(Summary) error) error {
	proj, names := projection()
	names["#sk"] = SortKey
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(table),
		ProjectionExpression:      aws.String(proj),
		FilterExpression:          aws.String("#sk = :head"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: map[string]types.AttributeValue{":head": &types.AttributeValueMemberS{Value: HeadSortKey}},
	}
	p := dynamodb.NewScanPaginator(api, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("catalog: list %s: %w", table, err)
		}
		for _, item := range page.Items {
			if err := fn(summaryOf(item)); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReadSummary returns the Summary of catalog id in table, read
// consistently. The error wraps ErrNotFound when id has no head.
func ReadSummary(ctx context.Context, api ListAPI, table, id string) (Summary, error) {
	if err := ValidateID(id); err != nil {
		return Summary{}, err
	}
	proj, names := projection()
	out, err := api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(table),
		Key:                      itemKey(id, HeadSortKey),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String(proj),
		ExpressionAttributeNames: names,
	})
	if err != nil {
		return Summary{}, fmt.Errorf("catalog: read the head of %q: %w", id, err)
	}
	if out.Item == nil {
		return Summary{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return summaryOf(out.Item), nil
}

// summaryOf decodes a head item projected to summaryAttributes.
func summaryOf(item map[string]types.AttributeValue) Summary {
	s := Summary{
		ID:           stringAttr(item, PartitionKey),
		Version:      stringAttr(item, attrVersion),
		DiscoveredAt: parseTime(stringAttr(item, attrDiscoveredAt)),
		CheckedAt:    parseTime(stringAttr(item, attrCheckedAt)),
	}
	s.ToolCount, _ = strconv.Atoi(numberAttr(item, attrToolCount))
	s.Failures, _ = strconv.Atoi(numberAttr(item, FailuresAttribute))
	if n, err := strconv.ParseInt(numberAttr(item, IntervalAttribute), 10, 64); err == nil {
		s.RefreshInterval = time.Duration(n) * time.Second
	}
	s.NextDue = epoch(item, NextDueAttribute)
	s.RetryAfter = epoch(item, RetryAfterAttribute)
	if m, ok := item[attrFailure].(*types.AttributeValueMemberM); ok {
		s.LastFailure = &Failure{
			ErrorType: stringAttr(m.Value, attrErrorType),
			Message:   stringAttr(m.Value, attrMessage),
			At:        parseTime(stringAttr(m.Value, attrAt)),
		}
	}
	return s
}

// epoch is the epoch-seconds number attribute name as a UTC time, or the
// zero time when absent.
func epoch(item map[string]types.AttributeValue, name string) time.Time {
	n, err := strconv.ParseInt(numberAttr(item, name), 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(n, 0).UTC()
}
