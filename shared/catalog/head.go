package catalog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/mcpfn/mcpfn/shared/text"
)

// head is the head item; exists is false when there is none.
type head struct {
	exists          bool
	version         string
	latest          string
	hash            string
	protocol        string
	serverName      string
	serverVersion   string
	discovery       string
	discoveredAt    time.Time
	checkedAt       time.Time
	toolCount       int
	refusedCount    int
	toolsExpire     int64
	shards          int
	nameIndex       []byte
	nameIndexStored bool
	exceptions      []byte // model_name_exceptions
	modelsInItems   bool
	changes         types.AttributeValue // decodeStoredChanges; nil for versions stored before diffs
	manifestChunks  int                  // the version's manifest items
	nameHints       []byte               // hintsByte per nameIndex entry; nil before hints
	retiring        string               // the version the last flip replaced
	onChange        string               // "" : accept
	quarantine      map[string]quarantineItem
	failure         *Failure
	sched           HeadSchedule
}

func (h *head) expired(now time.Time) bool {
	return h.toolsExpire != 0 && now.Unix() >= h.toolsExpire
}

// headItem is the head item as stored (docs/catalog.md), decoded with
// attributevalue. A []byte is nil only when its attribute is absent.
type headItem struct {
	Version        string       `dynamodbav:"version"`
	Latest         string       `dynamodbav:"latest"`
	Hash           string       `dynamodbav:"content_hash"`
	Protocol       string       `dynamodbav:"protocol_version"`
	ServerName     string       `dynamodbav:"server_name"`
	ServerVersion  string       `dynamodbav:"server_version"`
	Discovery      string       `dynamodbav:"server_discovery"`
	DiscoveredAt   string       `dynamodbav:"discovered_at"`
	CheckedAt      string       `dynamodbav:"checked_at"`
	ToolCount      int          `dynamodbav:"tool_count"`
	RefusedCount   int          `dynamodbav:"refused_count"`
	ToolsExpire    int64        `dynamodbav:"tools_expire_at"`
	Shards         int          `dynamodbav:"shards"`
	NameIndex      []byte       `dynamodbav:"name_index"`
	Exceptions     []byte       `dynamodbav:"model_name_exceptions"`
	ModelsInItems  bool         `dynamodbav:"model_names_in_items"`
	Changes        rawAttr      `dynamodbav:"changes"`
	ManifestChunks int          `dynamodbav:"manifest_chunks"`
	NameHints      []byte       `dynamodbav:"name_hints"`
	Retiring       string       `dynamodbav:"retiring"`
	OnChange       string       `dynamodbav:"on_change"`
	Quarantine     rawAttr      `dynamodbav:"quarantine"`
	Failure        *failureItem `dynamodbav:"last_failure"`
}

// rawAttr keeps an attribute as stored, to be decoded when needed.
type rawAttr struct{ v types.AttributeValue }

func (r *rawAttr) UnmarshalDynamoDBAttributeValue(v types.AttributeValue) error {
	r.v = v
	return nil
}

// failureItem is the head's last_failure map.
type failureItem struct {
	ErrorType string `dynamodbav:"error_type"`
	Message   string `dynamodbav:"message"`
	At        string `dynamodbav:"at"`
}

func (s *Dynamo) head(ctx context.Context, id string) (head, error) {
	item, err := s.getItem(ctx, id, HeadSortKey)
	if err != nil || item == nil {
		return head{}, err
	}
	it, sc, err := decodeHead(item)
	if err != nil {
		return head{}, fmt.Errorf("catalog: head of %q: %w", id, err)
	}
	q, err := decodeQuarantine(it.Quarantine.v)
	if err != nil {
		return head{}, fmt.Errorf("catalog: head of %q: %w", id, err)
	}
	h := head{
		exists:          true,
		version:         it.Version,
		latest:          it.Latest,
		hash:            it.Hash,
		protocol:        it.Protocol,
		serverName:      it.ServerName,
		serverVersion:   it.ServerVersion,
		discovery:       it.Discovery,
		discoveredAt:    parseTime(it.DiscoveredAt),
		checkedAt:       parseTime(it.CheckedAt),
		toolCount:       it.ToolCount,
		refusedCount:    it.RefusedCount,
		toolsExpire:     it.ToolsExpire,
		shards:          max(it.Shards, 1),
		nameIndex:       it.NameIndex,
		nameIndexStored: it.NameIndex != nil,
		exceptions:      it.Exceptions,
		modelsInItems:   it.ModelsInItems,
		changes:         it.Changes.v,
		manifestChunks:  it.ManifestChunks,
		nameHints:       it.NameHints,
		retiring:        it.Retiring,
		onChange:        it.OnChange,
		quarantine:      q,
		sched:           sc,
		failure:         it.failure(),
	}
	return h, nil
}

// decodeHead decodes a head item, whole or projected.
func decodeHead(item map[string]types.AttributeValue) (headItem, HeadSchedule, error) {
	var it headItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return headItem{}, HeadSchedule{}, err
	}
	sc, err := DecodeSchedule(item)
	return it, sc, err
}

// failure is the recorded last failure; nil when none.
func (it headItem) failure() *Failure {
	if it.Failure == nil {
		return nil
	}
	return &Failure{ErrorType: it.Failure.ErrorType, Message: it.Failure.Message, At: parseTime(it.Failure.At)}
}

func (h *head) catalog(id string) *Catalog {
	return &Catalog{
		ID:              id,
		Version:         h.version,
		ProtocolVersion: h.protocol,
		ServerName:      h.serverName,
		ServerVersion:   h.serverVersion,
		ServerDiscovery: h.discovery,
		ContentHash:     h.hash,
		DiscoveredAt:    h.discoveredAt,
		CheckedAt:       h.checkedAt,
		LastFailure:     h.failure,
		ServerOrigin:    h.sched.Origin(),
		VaultIDs:        h.sched.VaultIDs,
		RefreshInterval: h.sched.Recorded(),
		NextDue:         h.sched.Due(),
		OnChange:        h.onChange,
		Quarantined:     quarantineList(h.quarantine),
	}
}

// updateHead applies update to the head if cond holds; false means it
// did not.
func (s *Dynamo) updateHead(ctx context.Context, id string, update expression.UpdateBuilder, cond expression.ConditionBuilder) (bool, error) {
	e, err := expression.NewBuilder().WithUpdate(update).WithCondition(cond).Build()
	if err != nil {
		return false, fmt.Errorf("catalog: update head of %q: %w", id, err)
	}
	_, err = s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       headKey(id),
		UpdateExpression:          e.Update(),
		ConditionExpression:       e.Condition(),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}, withinDeadline(ctx))
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ccf):
		return false, nil
	}
	return false, failed(ctx, "update head of "+strconv.Quote(id), err)
}

// RecordFailure records f as the last failure of id unless a later one is
// recorded. It never touches the tools; a zero f.At means now.
func (s *Dynamo) RecordFailure(ctx context.Context, id string, f Failure) error {
	if err := ValidateID(id); err != nil {
		return err
	}
	if f.At.IsZero() {
		f.At = s.now()
	}
	at := formatTime(f.At)
	u := expression.Set(name(attrFailure), expression.Value(&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		attrErrorType: &types.AttributeValueMemberS{Value: text.Truncate(f.ErrorType, maxFailureType)},
		attrMessage:   &types.AttributeValueMemberS{Value: text.Truncate(f.Message, maxFailureText)},
		attrAt:        &types.AttributeValueMemberS{Value: at},
	}}))
	cond := expression.AttributeNotExists(name(attrFailure)).Or(name(attrFailure + "." + attrAt).LessThan(str(at)))
	_, err := s.updateHead(ctx, id, u, cond)
	return err
}

// discovery sets d's kept ServerDiscovery in u, or removes it when there
// is none.
func discovery(u expression.UpdateBuilder, d Discovery) expression.UpdateBuilder {
	if kept := keptDiscovery(d); kept != "" {
		return u.Set(name(attrDiscovery), str(kept))
	}
	return u.Remove(name(attrDiscovery))
}

// name, str, num and bin are an expression's attribute name and values,
// typed exactly as stored.
func name(attr string) expression.NameBuilder { return expression.Name(attr) }

func str(v string) expression.ValueBuilder {
	return expression.Value(&types.AttributeValueMemberS{Value: v})
}

func num(v int64) expression.ValueBuilder {
	return expression.Value(&types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)})
}

func bin(v []byte) expression.ValueBuilder {
	return expression.Value(&types.AttributeValueMemberB{Value: v})
}
