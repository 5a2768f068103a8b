package catalog

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
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
	changes         []byte // encodeChanges; nil for versions stored before diffs
	manifestChunks  int    // the version's manifest items; 0: the old layout
	nameHints       []byte // hintsByte per nameIndex entry; nil before hints
	retiring        string // the version the last flip replaced
	failure         *Failure
	sealedURL       []byte // server_url_sealed
	clearURL        string // server_url, as heads kept it before sealing
	origin          string
	vaultIDs        []string
	interval        time.Duration
	intervalSet     bool
	nextDue         time.Time
}

func (h *head) expired(now time.Time) bool {
	return h.toolsExpire != 0 && now.Unix() >= h.toolsExpire
}

func (s *Dynamo) head(ctx context.Context, id string) (head, error) {
	item, err := s.getItem(ctx, id, HeadSortKey)
	if err != nil || item == nil {
		return head{}, err
	}
	h := head{
		exists:        true,
		version:       stringAttr(item, attrVersion),
		latest:        stringAttr(item, attrLatest),
		hash:          stringAttr(item, attrHash),
		protocol:      stringAttr(item, attrProtocol),
		serverName:    stringAttr(item, attrServerName),
		serverVersion: stringAttr(item, attrServerVersion),
		discovery:     stringAttr(item, attrDiscovery),
		discoveredAt:  parseTime(stringAttr(item, attrDiscoveredAt)),
		checkedAt:     parseTime(stringAttr(item, attrCheckedAt)),
	}
	h.toolCount, _ = strconv.Atoi(numberAttr(item, attrToolCount))
	h.refusedCount, _ = strconv.Atoi(numberAttr(item, attrRefusedCount))
	h.toolsExpire, _ = strconv.ParseInt(numberAttr(item, attrToolsExpire), 10, 64)
	if h.shards, _ = strconv.Atoi(numberAttr(item, attrShards)); h.shards < 1 {
		h.shards = 1
	}
	if b, ok := item[attrNameIndex].(*types.AttributeValueMemberB); ok {
		h.nameIndex, h.nameIndexStored = b.Value, true
	}
	h.exceptions = binaryAttr(item, attrModelExceptions)
	h.manifestChunks, _ = strconv.Atoi(numberAttr(item, attrManifestChunks))
	h.nameHints = binaryAttr(item, attrNameHints)
	h.retiring = stringAttr(item, attrRetiring)
	h.changes = binaryAttr(item, attrChanges)
	if b, ok := item[attrModelsInItems].(*types.AttributeValueMemberBOOL); ok {
		h.modelsInItems = b.Value
	}
	h.readSchedule(item)
	if m, ok := item[attrFailure].(*types.AttributeValueMemberM); ok {
		h.failure = &Failure{
			ErrorType: stringAttr(m.Value, attrErrorType),
			Message:   stringAttr(m.Value, attrMessage),
			At:        parseTime(stringAttr(m.Value, attrAt)),
		}
	}
	return h, nil
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
		ServerOrigin:    h.origin,
		VaultIDs:        h.vaultIDs,
		RefreshInterval: h.interval,
		NextDue:         h.nextDue,
	}
}

// updateHead applies a conditional update to the head; false means the
// condition did not hold.
func (s *Dynamo) updateHead(ctx context.Context, id, update, cond string, e expr) (bool, error) {
	err := s.retry(ctx, "update head of "+strconv.Quote(id), func() error {
		_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(s.table),
			Key:                       headKey(id),
			UpdateExpression:          aws.String(update),
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeNames:  e.names,
			ExpressionAttributeValues: e.values,
		})
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return false, nil
	}
	return err == nil, err
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
	var e expr
	at := formatTime(f.At)
	update := "SET " + e.n(attrFailure) + " = " + e.v("f", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		attrErrorType: &types.AttributeValueMemberS{Value: text.Truncate(f.ErrorType, maxFailureType)},
		attrMessage:   &types.AttributeValueMemberS{Value: text.Truncate(f.Message, maxFailureText)},
		attrAt:        &types.AttributeValueMemberS{Value: at},
	}})
	cond := "attribute_not_exists(" + e.n(attrFailure) + ") OR " + e.n(attrFailure) + "." + e.n(attrAt) + " < " + e.s("at", at)
	_, err := s.updateHead(ctx, id, update, cond, e)
	return err
}

// discovery adds d's kept ServerDiscovery to set, or its removal to
// remove when there is none.
func (e *expr) discovery(d Discovery, set, remove []string) ([]string, []string) {
	if kept := keptDiscovery(d); kept != "" {
		return append(set, e.n(attrDiscovery)+" = "+e.s("sd", kept)), remove
	}
	return set, append(remove, e.n(attrDiscovery))
}

// updateExpr is an update expression of set and remove clauses.
func updateExpr(set, remove []string) string {
	u := "SET " + strings.Join(set, ", ")
	if len(remove) > 0 {
		u += " REMOVE " + strings.Join(remove, ", ")
	}
	return u
}

// expr collects the placeholders of one expression: every attribute name
// goes through #name, so reserved words never matter.
type expr struct {
	names  map[string]string
	values map[string]types.AttributeValue
}

func (e *expr) n(attr string) string {
	if e.names == nil {
		e.names = map[string]string{}
	}
	e.names["#"+attr] = attr
	return "#" + attr
}

func (e *expr) v(ph string, v types.AttributeValue) string {
	if e.values == nil {
		e.values = map[string]types.AttributeValue{}
	}
	e.values[":"+ph] = v
	return ":" + ph
}

func (e *expr) s(ph, v string) string { return e.v(ph, &types.AttributeValueMemberS{Value: v}) }

func (e *expr) b(ph string, v []byte) string { return e.v(ph, &types.AttributeValueMemberB{Value: v}) }

func (e *expr) num(ph string, v int64) string {
	return e.v(ph, &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)})
}
