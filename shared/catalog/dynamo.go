package catalog

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/shared/awsconf"
)

// DynamoAPI is the part of *dynamodb.Client a Dynamo store uses.
type DynamoAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

var _ DynamoAPI = (*dynamodb.Client)(nil)

// Attributes besides the keys (docs/catalog.md).
const (
	attrVersion       = "version"
	attrLatest        = "latest"
	attrHash          = "content_hash"
	attrProtocol      = "protocol_version"
	attrServerName    = "server_name"
	attrServerVersion = "server_version"
	attrDiscovery     = "server_discovery"
	attrDiscoveredAt  = "discovered_at"
	attrCheckedAt     = "checked_at"
	attrToolCount     = "tool_count"
	attrRefusedCount  = "refused_count"
	attrToolsExpire   = "tools_expire_at"
	attrShards        = "shards"
	attrNameIndex     = "name_index"
	attrFailure       = "last_failure"
	attrErrorType     = "error_type"
	attrMessage       = "message"
	attrAt            = "at"

	attrSeq         = "seq"
	attrName        = "name"
	attrDescription = "description"
	attrSchema      = "input_schema"
	attrZipped      = "z"
	attrReason      = "reason"

	attrTitle        = "title"
	attrOutputSchema = "output_schema"
	attrAnnotations  = "annotations"
	attrMeta         = "meta"
	attrModelName    = "model_name"
	attrToolHash     = "tool_hash"
	attrChanges      = "changes"

	attrModelExceptions = "model_name_exceptions"
	attrModelsInItems   = "model_names_in_items"

	attrManifest       = "manifest"
	attrChunks         = "chunks"
	attrManifestChunks = "manifest_chunks"
	attrNameHints      = "name_hints"
	attrRetiring       = "retiring"
	attrOnChange       = "on_change"
	attrQuarantine     = "quarantine"
)

// Defaults of a Dynamo store.
const (
	DefaultRetention    = 365 * 24 * time.Hour
	DefaultBackoffMin   = 20 * time.Millisecond
	DefaultBackoffMax   = time.Second
	DefaultNameIndexMax = 16384
)

// maxRounds bounds the conditional writes one call makes while other
// writers keep changing the head.
const maxRounds = 32

// A version's items are spread over partitions of about shardBytes each,
// so one Query page reads a partition, and at most maxShards of them.
const (
	shardBytes = 768 << 10
	maxShards  = 64
)

// Dynamo is a Store in one DynamoDB table laid out as docs/catalog.md
// describes. It is safe for concurrent use.
type Dynamo struct {
	api          DynamoAPI
	table        string
	retention    time.Duration
	now          func() time.Time
	backoff      awsconf.Backoff // between rounds of unprocessed items
	nameIndexMax int
	exceptionMax int
	chunkBytes   int // manifest bytes per item
	sealer       Sealer
}

// DynamoOption configures a Dynamo store.
type DynamoOption func(*Dynamo)

// WithRetention sets how long a version's items live without a check:
// each carries TTLAttribute at write time + d, renewed by a check after half
// of d. Default DefaultRetention.
func WithRetention(d time.Duration) DynamoOption { return func(s *Dynamo) { s.retention = d } }

// WithClock sets the clock. Default time.Now.
func WithClock(now func() time.Time) DynamoOption { return func(s *Dynamo) { s.now = now } }

// WithBackoff sets the jittered exponential backoff between rounds of
// items a BatchWriteItem left unprocessed; the client's retryer backs off
// between retries of a request. Default DefaultBackoffMin,
// DefaultBackoffMax.
func WithBackoff(lo, hi time.Duration) DynamoOption {
	return func(s *Dynamo) { s.backoff = awsconf.Backoff{Min: lo, Max: hi} }
}

// WithNameIndexMax sets the largest catalog whose tool names the head
// indexes for a one-read Lookup. Default DefaultNameIndexMax.
func WithNameIndexMax(n int) DynamoOption { return func(s *Dynamo) { s.nameIndexMax = n } }

// NewDynamo returns a store in table (created by CreateTable or the
// template). Requests are retried by the client's retryer (awsconf.Load
// configures it), never with a backoff that would outlast the context's
// deadline; a request that the retryer gave up on, or whose context ended,
// fails with ErrUnavailable.
func NewDynamo(client DynamoAPI, table string, opts ...DynamoOption) *Dynamo {
	s := &Dynamo{
		api:          client,
		table:        table,
		retention:    DefaultRetention,
		now:          time.Now,
		backoff:      awsconf.Backoff{Min: DefaultBackoffMin, Max: DefaultBackoffMax},
		nameIndexMax: DefaultNameIndexMax,
		exceptionMax: maxModelExceptions,
		chunkBytes:   manifestChunkBytes,
	}
	for _, o := range opts {
		o(s)
	}
	return s
}
