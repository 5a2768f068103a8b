package catalog

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
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

// projection is summaryAttributes as a projection.
func projection() expression.ProjectionBuilder {
	p := expression.NamesList(name(summaryAttributes[0]))
	for _, a := range summaryAttributes[1:] {
		p = p.AddNames(name(a))
	}
	return p
}

// List calls fn with the Summary of every catalog in table, in no
// particular order, until fn returns an error, which List returns. It
// pages through one Scan that returns head items only; its cost is a read
// of the whole table, so it is an operator's tool, not a request path.
// SDK errors (a missing table, an unreachable endpoint) come back wrapped.
func List(ctx context.Context, api ListAPI, table string, fn func(Summary) error) error {
	e, err := expression.NewBuilder().WithProjection(projection()).
		WithFilter(name(SortKey).Equal(str(HeadSortKey))).Build()
	if err != nil {
		return fmt.Errorf("catalog: list %s: %w", table, err)
	}
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(table),
		ProjectionExpression:      e.Projection(),
		FilterExpression:          e.Filter(),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}
	p := dynamodb.NewScanPaginator(api, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("catalog: list %s: %w", table, err)
		}
		for _, item := range page.Items {
			sum, err := summaryOf(item)
			if err != nil {
				return fmt.Errorf("catalog: list %s: %w", table, err)
			}
			if err := fn(sum); err != nil {
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
	e, err := expression.NewBuilder().WithProjection(projection()).Build()
	if err != nil {
		return Summary{}, fmt.Errorf("catalog: read the head of %q: %w", id, err)
	}
	out, err := api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(table),
		Key:                      itemKey(id, HeadSortKey),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     e.Projection(),
		ExpressionAttributeNames: e.Names(),
	})
	if err != nil {
		return Summary{}, fmt.Errorf("catalog: read the head of %q: %w", id, err)
	}
	if out.Item == nil {
		return Summary{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	sum, err := summaryOf(out.Item)
	if err != nil {
		return Summary{}, fmt.Errorf("catalog: read the head of %q: %w", id, err)
	}
	return sum, nil
}

// summaryOf decodes a head item projected to summaryAttributes.
func summaryOf(item map[string]types.AttributeValue) (Summary, error) {
	it, hs, err := decodeHead(item)
	if err != nil {
		return Summary{}, err
	}
	s := Summary{
		ID:              hs.CatalogID,
		Version:         it.Version,
		ToolCount:       it.ToolCount,
		DiscoveredAt:    parseTime(it.DiscoveredAt),
		CheckedAt:       parseTime(it.CheckedAt),
		LastFailure:     it.failure(),
		RefreshInterval: hs.Recorded(),
		NextDue:         hs.Due(),
	}
	if hs.Failures != nil {
		s.Failures = int(*hs.Failures)
	}
	if hs.RetryAfter != nil {
		s.RetryAfter = time.Unix(*hs.RetryAfter, 0).UTC()
	}
	return s, nil
}
