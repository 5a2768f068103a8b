package catalog_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
)

// assertMissing checks that Get reports the version as missing, naming
// the catalog and the version, and not as contention.
func assertMissing(t *testing.T, s catalog.Store, id, version string) {
	t.Helper()
	_, err := s.Get(context.Background(), id)
	if !errors.Is(err, catalog.ErrVersionMissing) || errors.Is(err, catalog.ErrUnavailable) {
		t.Fatalf("Get: %v, want ErrVersionMissing", err)
	}
	if msg := err.Error(); !strings.Contains(msg, `"`+id+`"`) || !strings.Contains(msg, version) || strings.Contains(msg, "changed") {
		t.Errorf("Get: %q, want the catalog and version named", msg)
	}
}

func TestGetMissingVersionItem(t *testing.T) {
	t.Parallel()
	client, table := catalogtest.NewTable(t, awstest.SharedMoto(t))
	s := catalog.NewDynamo(client, table)
	res := catalogtest.MustPut(t, s, "gone", catalogtest.Discover(catalogtest.Listing(3, "a"), 0))
	_, err := client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
		catalog.PartitionKey: &types.AttributeValueMemberS{Value: "gone"},
		catalog.SortKey:      &types.AttributeValueMemberS{Value: "v#" + res.Version},
	}})
	if err != nil {
		t.Fatal(err)
	}
	assertMissing(t, s, "gone", res.Version)
}

func TestDirGetMissingVersionFile(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s, err := catalog.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	res := catalogtest.MustPut(t, s, "gone", catalogtest.Discover(catalogtest.Listing(3, "a"), 0))
	removed := 0
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == res.Version+".json" {
			removed++
			return os.Remove(path)
		}
		return err
	})
	if removed != 1 {
		t.Fatalf("removed %d version files", removed)
	}
	assertMissing(t, s, "gone", res.Version)
}

// TestGetMissingToolItem: a version that lost one tool item is missing,
// and the error says how many of its tools are gone.
func TestGetMissingToolItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, table := catalogtest.NewTable(t, awstest.SharedMoto(t))
	s := catalog.NewDynamo(client, table)
	res := catalogtest.MustPut(t, s, "lost", catalogtest.Discover(catalogtest.Listing(3, "a"), 0))
	out, err := client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	deleted := false
	for _, item := range out.Items {
		pk, _ := item[catalog.PartitionKey].(*types.AttributeValueMemberS)
		sk, _ := item[catalog.SortKey].(*types.AttributeValueMemberS)
		if pk == nil || sk == nil || !strings.HasPrefix(pk.Value, "lost#c#") || !strings.HasPrefix(sk.Value, "t#") {
			continue
		}
		if _, err := client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
			catalog.PartitionKey: pk, catalog.SortKey: sk,
		}}); err != nil {
			t.Fatal(err)
		}
		deleted = true
		break
	}
	if !deleted {
		t.Fatal("found no tool item to delete")
	}
	assertMissing(t, s, "lost", res.Version)
	if _, err := s.Get(ctx, "lost"); err == nil || !strings.Contains(err.Error(), "1 of its 3 tools") {
		t.Errorf("Get: %v, want 1 of its 3 tools named missing", err)
	}
}
