package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/shared/audit"
	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
)

// TestPolicyCommands sets, prints and deletes a catalog's policy over
// moto; an invalid document is refused and leaves the one set. It sets
// the environment, so it does not run in parallel.
func TestPolicyCommands(t *testing.T) {
	m := awstest.SharedMoto(t)
	_, table := catalogtest.NewTable(t, m)
	setMotoEnv(t)
	store := []string{"--table", table, "--endpoint", m.Endpoint()}
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"default": "ask", "rules": [{"tool": "transfer", "decision": "deny", "when": "args.amount > 1000"}]}`)
	bad := write("bad.json", `{"default": "ask", "rules": [{"tool": "transfer", "decision": "deny", "when": "args.amount >"}]}`)

	if code, _, stderr := cmd(t, nil, append(append([]string{"policy", "get"}, store...), "main")...); code != exitFail || !strings.Contains(stderr, "no policy") {
		t.Errorf("get before set: exit %d, %q", code, stderr)
	}
	out := mustRun(t, append(append([]string{"policy", "set"}, store...), "--file", good, "main")...)
	if !strings.Contains(string(out), "policy_sha256") {
		t.Errorf("set printed %s", out)
	}
	code, _, stderr := cmd(t, nil, append(append([]string{"policy", "set"}, store...), "--file", bad, "main")...)
	if code != exitFail || !strings.Contains(stderr, "rule 0") || !strings.Contains(stderr, "not valid CEL") {
		t.Errorf("set an invalid policy: exit %d, %q; want %d naming rule 0", code, stderr, exitFail)
	}
	var doc struct{ Default string }
	decode(t, mustRun(t, append(append([]string{"policy", "get"}, store...), "main")...), &doc)
	if doc.Default != "ask" {
		t.Errorf("get = %+v, want the document set first", doc)
	}
	mustRun(t, append(append([]string{"policy", "delete"}, store...), "main")...)
	if code, _, _ := cmd(t, nil, append(append([]string{"policy", "get"}, store...), "main")...); code != exitFail {
		t.Errorf("get after delete: exit %d, want %d", code, exitFail)
	}
	if code, _, stderr := cmd(t, nil, "policy", "set", "--dir", dir, "--file", good, "main"); code != exitUsage || !strings.Contains(stderr, "--table") {
		t.Errorf("a directory store: exit %d, %q; want usage", code, stderr)
	}
	if code, _, _ := cmd(t, nil, "policy", "approve", "main"); code != exitUsage {
		t.Errorf("policy approve: exit %d, want usage", code)
	}
}

// TestAuditCommand prints a chain and verifies it; a deleted entry makes
// --verify exit 1 naming it.
func TestAuditCommand(t *testing.T) {
	m := awstest.SharedMoto(t)
	client, table := awstest.NewTable(t, m, "audit", audit.CreateTable)
	setMotoEnv(t)
	s := audit.New(client, table)
	for _, d := range []string{audit.Denied, audit.Asked, audit.Approved} {
		if _, err := s.Append(t.Context(), audit.Entry{CatalogID: "main", Version: "v1", Tool: "transfer", Decision: d, By: "call"}); err != nil {
			t.Fatal(err)
		}
	}
	flags := []string{"--endpoint", m.Endpoint(), "--audit-table", table}
	var entries []audit.Entry
	decode(t, mustRun(t, append(append([]string{"audit"}, flags...), "main")...), &entries)
	if len(entries) != 3 || entries[2].Decision != audit.Approved || entries[2].Prev != audit.Hash(entries[1]) {
		t.Errorf("audit = %+v, want the three entries chained", entries)
	}
	mustRun(t, append(append([]string{"audit"}, flags...), "--verify", "main")...)
	if _, err := client.DeleteItem(t.Context(), deleteEntry(table, "main", 2)); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := cmd(t, nil, append(append([]string{"audit"}, flags...), "--verify", "main")...)
	if code != exitFail || !strings.Contains(stderr, "entry 2 deleted") || !strings.Contains(stdout, `"deleted"`) {
		t.Errorf("--verify after a deletion: exit %d, stdout %s, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := cmd(t, nil, "audit", "--endpoint", m.Endpoint(), "main"); code != exitUsage || !strings.Contains(stderr, "MCPFN_AUDIT_TABLE") {
		t.Errorf("no audit table: exit %d, %q", code, stderr)
	}
}

func deleteEntry(table, id string, seq int) *dynamodb.DeleteItemInput {
	return &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
		audit.PartitionKey: &types.AttributeValueMemberS{Value: id},
		audit.SortKey:      &types.AttributeValueMemberS{Value: fmt.Sprintf("e#%020d", seq)},
	}}
}
