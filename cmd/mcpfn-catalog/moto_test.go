package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
)

// TestTable reads a catalog from a DynamoDB table on moto through --table
// and --endpoint, with the AWS configuration from the environment as the
// functions load it. It sets the environment, so it does not run in
// parallel.
func TestTable(t *testing.T) {
	m := awstest.SharedMoto(t)
	client, table := catalogtest.NewTable(t, m)
	s := catalog.NewDynamo(client, table)
	catalogtest.MustPut(t, s, "main", catalogtest.Discover(listing(), 0))
	if err := s.RecordFailure(t.Context(), "main", catalog.Failure{
		ErrorType: "mcp_connection_failed_error", Message: "dial: refused", At: catalogtest.T0.Add(time.Hour),
	}); err != nil {
		t.Fatal(err)
	}
	setMotoEnv(t)
	store := []string{"--table", table, "--endpoint", m.Endpoint()}

	checkGet(t, mustRun(t, append(append([]string{"get"}, store...), "main")...), s, "main")

	out := mustRun(t, append(append([]string{"tools"}, store...), "--read-only", "main")...)
	var raw []map[string]any
	decode(t, out, &raw)
	if len(raw) != 2 || raw[0]["name"] != catalogtest.MappedName("files.read", 12) || raw[1]["name"] != "search" {
		t.Errorf("tools --read-only = %s, want files.read's model name and search", out)
	}

	code, _, stderr := cmd(t, nil, append(append([]string{"get"}, store...), "nobody")...)
	if code != exitFail || !strings.Contains(stderr, `catalog "nobody" not found`) {
		t.Errorf("get nobody: exit %d, stderr %q; want %d, not found", code, stderr, exitFail)
	}
	code, _, stderr = cmd(t, map[string]string{"MCPFN_CATALOG_TABLE": table}, "get", "--endpoint", m.Endpoint(), "main")
	if code != exitOK {
		t.Errorf("--endpoint with MCPFN_CATALOG_TABLE: exit %d, stderr %q", code, stderr)
	}
}

// setMotoEnv sets the AWS configuration the command loads to moto's
// credentials and region, with no profile and no endpoint override.
func setMotoEnv(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_REGION": awstest.Region, "AWS_ACCESS_KEY_ID": awstest.AccessKeyID, "AWS_SECRET_ACCESS_KEY": awstest.SecretAccessKey,
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_PROFILE": "", "AWS_ENDPOINT_URL": "",
		"AWS_ENDPOINT_URL_DYNAMODB": "",
	} {
		t.Setenv(k, v)
	}
}
