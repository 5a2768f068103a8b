package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/shared/awsconf"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/startup"
)

// store is the catalog store the flags and environment name. api and
// table are set for a DynamoDB table, nil and "" for a directory store.
type store struct {
	get   getter
	api   *dynamodb.Client
	table string
	where string // the store in messages: no credentials, no URL path
	sf    storeFlags
}

// read opens the store sf chooses and gets id, within sf.timeout. A
// missing catalog is reported as such.
func read(ctx context.Context, sf storeFlags, getenv func(string) string, id string) (*catalog.Catalog, error) {
	if err := catalog.ValidateID(id); err != nil {
		return nil, err
	}
	ctx, s, cancel, err := openBounded(ctx, sf, getenv)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return s.read(ctx, id)
}

// read gets catalog id from s.
func (s *store) read(ctx context.Context, id string) (*catalog.Catalog, error) {
	c, err := s.get.Get(ctx, id)
	switch {
	case errors.Is(err, catalog.ErrNotFound):
		return nil, failf("catalog %q not found", id)
	case errors.Is(err, catalog.ErrVersionMissing):
		return nil, failf("%s", oneLine(err))
	case err != nil:
		return nil, s.fail(ctx, err)
	}
	return c, nil
}

// openBounded opens the store sf names within sf.timeout: the context it
// returns ends then, and cancel releases it.
func openBounded(ctx context.Context, sf storeFlags, getenv func(string) string) (context.Context, *store, context.CancelFunc, error) {
	ctx, cancel, err := bounded(ctx, sf)
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := open(ctx, sf, getenv)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return ctx, s, cancel, nil
}

// bounded is ctx ended after sf.timeout.
func bounded(ctx context.Context, sf storeFlags) (context.Context, context.CancelFunc, error) {
	if sf.timeout <= 0 {
		return nil, nil, usagef("--timeout %s: want a positive duration", sf.timeout)
	}
	ctx, cancel := context.WithTimeout(ctx, sf.timeout)
	return ctx, cancel, nil
}

// open returns the store sf names: flags first, then the functions'
// environment variables. A directory store must already exist; a table
// needs an AWS region.
func open(ctx context.Context, sf storeFlags, getenv func(string) string) (*store, error) {
	table, dir := sf.table, sf.dir
	switch {
	case table != "" && dir != "":
		return nil, usagef("give --table or --dir, not both")
	case table == "" && dir == "":
		if table = getenv(startup.EnvCatalogTable); table == "" {
			dir = getenv(startup.EnvCatalogDir)
		}
	}
	switch {
	case table == "" && dir == "":
		return nil, usagef("no store: give --table or --dir (or set %s or %s)", startup.EnvCatalogTable, startup.EnvCatalogDir)
	case table == "" && sf.endpoint != "":
		return nil, usagef("--endpoint needs --table")
	case table == "":
		if fi, err := os.Stat(dir); err != nil {
			return nil, storeErrorf("directory store: %s", oneLine(err))
		} else if !fi.IsDir() {
			return nil, storeErrorf("directory store %s: not a directory", dir)
		}
		d, err := catalog.NewDir(dir)
		if err != nil {
			return nil, storeErrorf("directory store: %s", oneLine(err))
		}
		return &store{get: d, where: "directory " + dir, sf: sf}, nil
	}
	where := "DynamoDB"
	if sf.endpoint != "" {
		u, err := url.Parse(sf.endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, usagef("--endpoint %q: want an http or https URL", sf.endpoint)
		}
		where = "DynamoDB at " + u.Scheme + "://" + u.Host
	}
	cfg, err := awsconf.Load(ctx)
	if err != nil {
		return nil, storeErrorf("AWS configuration: %s", oneLine(err))
	}
	if cfg.Region == "" {
		return nil, storeErrorf("no AWS region: set AWS_REGION (or a region in the AWS profile)")
	}
	api := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if sf.endpoint != "" {
			o.BaseEndpoint = aws.String(sf.endpoint)
		}
	})
	return &store{
		get: catalog.NewDynamo(api, table), api: api, table: table,
		where: fmt.Sprintf("%s (region %s)", where, cfg.Region), sf: sf,
	}, nil
}

// fail is err from reading s as the one line the command prints: a
// missing table, no answer within --timeout, a refused or unresolved
// connection (after the retries --timeout allows), or the store's error.
func (s *store) fail(ctx context.Context, err error) error {
	var noTable *types.ResourceNotFoundException
	switch {
	case errors.As(err, &noTable):
		return storeErrorf("table %q not found in %s", s.table, s.where)
	case ctx.Err() != nil:
		return storeErrorf("no answer from %s within %s (--timeout): %s", s.where, s.sf.timeout, cause(err))
	case isNetwork(err):
		return storeErrorf("cannot reach %s: %s", s.where, cause(err))
	}
	return storeErrorf("%s: %s", s.where, oneLine(err))
}
