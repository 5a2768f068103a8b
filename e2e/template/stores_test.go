package template

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/audit"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/ledger"
	"github.com/mcpfn/mcpfn/shared/render"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/schedule"
	"github.com/mcpfn/mcpfn/shared/vault"
)

func realTemplate(t *testing.T) doc {
	t.Helper()
	d, err := loadTemplate(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestTablesMatchTheStores checks each table's keys and TTL attribute are
// the ones the Go stores read and write.
func TestTablesMatchTheStores(t *testing.T) {
	d := realTemplate(t)
	tests := []struct {
		table   string
		keys    map[string]string // attribute → HASH/RANGE
		ttlAttr string
		types   map[string]string            // attribute → S/N
		indexes map[string]map[string]string // index → attribute → HASH/RANGE
	}{
		{"CatalogTable", map[string]string{catalog.PartitionKey: "HASH", catalog.SortKey: "RANGE"}, catalog.TTLAttribute,
			map[string]string{catalog.PartitionKey: "S", catalog.SortKey: "S", catalog.DueShardAttribute: "S", catalog.NextDueAttribute: "N"},
			map[string]map[string]string{catalog.DueIndex: {catalog.DueShardAttribute: "HASH", catalog.NextDueAttribute: "RANGE"}}},
		{"CallsTable", map[string]string{ledger.KeyAttribute: "HASH"}, ledger.TTLAttribute,
			map[string]string{ledger.KeyAttribute: "S"}, map[string]map[string]string{}},
		{"AuditTable", map[string]string{audit.PartitionKey: "HASH", audit.SortKey: "RANGE"}, "",
			map[string]string{audit.PartitionKey: "S", audit.SortKey: "S"}, map[string]map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.table, func(t *testing.T) {
			props := path(d, "Resources", tt.table, "Properties")
			got := map[string]string{}
			for _, k := range asSlice(path(props, "KeySchema")) {
				got[path(k, "AttributeName").(string)] = path(k, "KeyType").(string)
			}
			if diff := cmp.Diff(tt.keys, got); diff != "" {
				t.Errorf("KeySchema (-want +got):\n%s", diff)
			}
			attrs := map[string]string{}
			for _, a := range asSlice(path(props, "AttributeDefinitions")) {
				attrs[path(a, "AttributeName").(string)] = path(a, "AttributeType").(string)
			}
			if diff := cmp.Diff(tt.types, attrs); diff != "" {
				t.Errorf("AttributeDefinitions (-want +got):\n%s", diff)
			}
			indexes := map[string]map[string]string{}
			for _, ix := range asSlice(path(props, "GlobalSecondaryIndexes")) {
				keys := map[string]string{}
				for _, k := range asSlice(path(ix, "KeySchema")) {
					keys[path(k, "AttributeName").(string)] = path(k, "KeyType").(string)
				}
				indexes[path(ix, "IndexName").(string)] = keys
				if tt.table == "CatalogTable" {
					var got []string
					for _, a := range asSlice(path(ix, "Projection", "NonKeyAttributes")) {
						got = append(got, a.(string))
					}
					if diff := cmp.Diff(catalog.DueIndexProjection, got); diff != "" {
						t.Errorf("index projection (-want +got):\n%s", diff)
					}
				}
			}
			if diff := cmp.Diff(tt.indexes, indexes); diff != "" {
				t.Errorf("GlobalSecondaryIndexes (-want +got):\n%s", diff)
			}
			if got, _ := path(props, "TimeToLiveSpecification", "AttributeName").(string); got != tt.ttlAttr {
				t.Errorf("TTL attribute %v, want %s", got, tt.ttlAttr)
			}
		})
	}
}

// TestPoliciesGrantWhatTheClientsCall checks each policy statement grants
// exactly the operations of the client interface the function's code is
// written against: a method added to an interface without its permission,
// or a permission nothing calls, fails here.
func TestPoliciesGrantWhatTheClientsCall(t *testing.T) {
	d := realTemplate(t)
	tests := []struct {
		role, sid string
		service   string
		api       reflect.Type
		only      []string // when set, the statement grants this subset of api
		resource  string   // logical id the statement is scoped to; "" for a Sub ARN; "*" for exactly "*"
	}{
		{"DiscoverRole", "Catalog", "dynamodb", reflect.TypeFor[catalog.DynamoAPI](), nil, "CatalogTable"},
		{"CallRole", "CatalogRead", "dynamodb", reflect.TypeFor[catalog.DynamoAPI](), []string{"GetItem", "Query"}, "CatalogTable"},
		{"CallRole", "CallLedger", "dynamodb", reflect.TypeFor[ledger.DynamoAPI](), nil, "CallsTable"},
		{"CallRole", "AuditRead", "dynamodb", reflect.TypeFor[audit.DynamoAPI](), []string{"GetItem", "Query"}, "AuditTable"},
		{"CallRole", "AuditAppend", "dynamodb", reflect.TypeFor[audit.DynamoAPI](), []string{"TransactWriteItems"}, "AuditTable"},
		{"DiscoverRole", "AuditRead", "dynamodb", reflect.TypeFor[audit.DynamoAPI](), []string{"GetItem", "Query"}, "AuditTable"},
		{"DiscoverRole", "AuditAppend", "dynamodb", reflect.TypeFor[audit.DynamoAPI](), []string{"TransactWriteItems"}, "AuditTable"},
		{"DiscoverRole", "Vaults", "secretsmanager", reflect.TypeFor[vault.SecretsAPI](), nil, ""},
		{"CallRole", "Vaults", "secretsmanager", reflect.TypeFor[vault.SecretsAPI](), nil, ""},
		{"DiscoverRole", "VaultWriteBack", "secretsmanager", reflect.TypeFor[vault.SecretsWriter](), nil, ""},
		{"CallRole", "VaultWriteBack", "secretsmanager", reflect.TypeFor[vault.SecretsWriter](), nil, ""},
		{"DiscoverRole", "DeadLetters", "sqs", reflect.TypeFor[runner.QueueAPI](), nil, "DiscoverDLQ"},
		{"CallRole", "DeadLetters", "sqs", reflect.TypeFor[runner.QueueAPI](), nil, "CallDLQ"},
		{"CallRole", "Redeliveries", "sqs", reflect.TypeFor[runner.SenderAPI](), nil, "CallQueue"},
		{"DiscoverRole", "TaskTokens", "states", reflect.TypeFor[runner.TaskAPI](), nil, "*"}, // no resource type in IAM
		{"CallRole", "TaskTokens", "states", reflect.TypeFor[runner.TaskAPI](), nil, "*"},     // no resource type in IAM
		{"CallRole", "Results", "s3", reflect.TypeFor[render.ObjectPutter](), nil, ""},
		{"DiscoverRole", "Schedule", "dynamodb", reflect.TypeFor[schedule.DynamoAPI](), []string{"GetItem", "UpdateItem"}, "CatalogTable"},
		{"DiscoverRole", "DueIndex", "dynamodb", reflect.TypeFor[schedule.DynamoAPI](), []string{"Query"}, ""}, // the index ARN: TestSweepIsScheduled
		{"DiscoverRole", "Rediscoveries", "sqs", reflect.TypeFor[schedule.QueueAPI](), nil, "DiscoverQueue"},
		{"CallRole", "StaleRequests", "dynamodb", reflect.TypeFor[schedule.DynamoAPI](), []string{"GetItem", "UpdateItem"}, "CatalogTable"},
		{"CallRole", "Rediscoveries", "sqs", reflect.TypeFor[schedule.QueueAPI](), []string{"SendMessage"}, "DiscoverQueue"}, // call sends one at a time
		{"SweepSchedulerRole", "InvokeDiscover", "lambda", reflect.TypeFor[invoker](), nil, "DiscoverFunction.Alias"},
	}
	for _, tt := range tests {
		t.Run(tt.role+"/"+tt.sid, func(t *testing.T) {
			st := statement(d, tt.role, tt.sid)
			if st == nil {
				t.Fatalf("%s has no statement %s", tt.role, tt.sid)
			}
			var want []string
			for i := range tt.api.NumMethod() {
				m := tt.api.Method(i).Name
				if tt.only == nil || slices.Contains(tt.only, m) {
					want = append(want, tt.service+":"+iamAction(m))
				}
			}
			if len(want) == 0 {
				t.Fatalf("%v has none of the methods %v", tt.api, tt.only)
			}
			var got []string
			switch a := path(st, "Action").(type) {
			case string:
				got = []string{a}
			case []any:
				for _, s := range a {
					got = append(got, s.(string))
				}
			}
			slices.Sort(want)
			want = slices.Compact(want)
			slices.Sort(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			switch res := path(st, "Resource"); tt.resource {
			case "*":
				if res != "*" {
					t.Errorf("Resource %v, want \"*\"", res)
				}
			case "":
				if sub, ok := path(res, "Fn::Sub").(string); !ok || sub == "*" {
					t.Errorf("Resource %v, want a scoped !Sub ARN", res)
				}
			default:
				if id, _, _ := refName(res); id != tt.resource {
					t.Errorf("Resource %v, want %s", res, tt.resource)
				}
			}
		})
	}
}

// iamAction is the IAM action that authorizes an API operation: the batch
// operations of SQS are authorized by their single forms, and a
// TransactWriteItems by its items' operations (shared/audit's hold Puts
// only).
func iamAction(op string) string {
	switch op {
	case "TransactWriteItems":
		return "PutItem"
	case "SendMessageBatch", "DeleteMessageBatch", "ChangeMessageVisibilityBatch":
		return strings.TrimSuffix(op, "Batch")
	}
	return op
}

// statement finds the inline policy statement with Sid sid in role,
// including one inside an !If.
func statement(d doc, role, sid string) map[string]any {
	for _, pol := range asSlice(path(d, "Resources", role, "Properties", "Policies")) {
		for _, st := range asSlice(path(pol, "PolicyDocument", "Statement")) {
			if ifArgs := asSlice(path(st, "Fn::If")); len(ifArgs) == 3 {
				st = ifArgs[1]
			}
			if m, ok := st.(map[string]any); ok && m["Sid"] == sid {
				return m
			}
		}
	}
	return nil
}
