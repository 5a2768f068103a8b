package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mcpfn/mcpfn/shared/audit"
	"github.com/mcpfn/mcpfn/shared/policy"
	"github.com/mcpfn/mcpfn/shared/startup"
)

// runPolicy runs policy set, get or delete on a catalog's policy document
// (a table store only).
func runPolicy(ctx context.Context, args []string, stdout io.Writer, stdin io.Reader, getenv func(string) string) error {
	if len(args) == 0 {
		return usagef("want policy set, get or delete (mcpfn-catalog policy -h)")
	}
	sub, rest := args[0], args[1:]
	if sub == "-h" || sub == "--help" || sub == "help" {
		fmt.Fprintf(stdout, "Usage:\n  %s\n  %s\n  %s\n%s", commandUsage["policy set"], commandUsage["policy get"], commandUsage["policy delete"], exitStatuses)
		return nil
	}
	name := "policy " + sub
	if _, ok := commandUsage[name]; !ok {
		return usagef("unknown policy command %q: want set, get or delete", sub)
	}
	fs := newFlagSet(name, stdout)
	var sf storeFlags
	sf.register(fs.FlagSet)
	file := ""
	if sub == "set" {
		fs.StringVar(&file, "file", "", "the policy document (JSON; - for standard input)")
	}
	id, err := parse(fs, rest)
	if err != nil {
		return err
	}
	var doc []byte
	if sub == "set" {
		if doc, err = readPolicyFile(file, stdin); err != nil {
			return err
		}
	}
	ctx, s, cancel, err := openBounded(ctx, sf, getenv)
	if err != nil {
		return err
	}
	defer cancel()
	if s.api == nil {
		return usagef("policies are kept in the catalog table: give --table (or set %s)", startup.EnvCatalogTable)
	}
	ps := policy.NewStore(s.api, s.table)
	switch sub {
	case "set":
		err = ps.Put(ctx, id, doc)
		if errors.Is(err, policy.ErrInvalid) {
			return failf("%s", oneLine(err))
		}
		if err != nil {
			return s.fail(ctx, err)
		}
		sum := sha256.Sum256(doc)
		return writeJSON(stdout, map[string]string{"catalog_id": id, "policy_sha256": hex.EncodeToString(sum[:])})
	case "get":
		doc, err := ps.Get(ctx, id)
		switch {
		case err != nil:
			return s.fail(ctx, err)
		case doc == nil:
			return failf("catalog %q has no policy: every call is allowed", id)
		}
		return writeJSON(stdout, json.RawMessage(doc))
	default:
		if err := ps.Delete(ctx, id); err != nil {
			return s.fail(ctx, err)
		}
		return writeJSON(stdout, map[string]string{"catalog_id": id, "policy": "deleted"})
	}
}

// readPolicyFile reads --file (- : stdin), at most policy.MaxBytes + 1
// bytes so that a larger one is refused by the parser, not read whole.
func readPolicyFile(file string, stdin io.Reader) ([]byte, error) {
	var r io.Reader
	switch file {
	case "":
		return nil, usagef("policy set wants --file FILE (- for standard input)")
	case "-":
		r = stdin
	default:
		f, err := os.Open(file)
		if err != nil {
			return nil, failf("policy file: %s", oneLine(err))
		}
		defer f.Close()
		r = f
	}
	doc, err := io.ReadAll(io.LimitReader(r, policy.MaxBytes+1))
	if err != nil {
		return nil, failf("policy file: %s", oneLine(err))
	}
	return doc, nil
}

// runAudit prints a catalog's audit entries, or with --verify the chain's
// check (exit 1 when it is broken).
func runAudit(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	fs := newFlagSet("audit", stdout)
	var sf storeFlags
	sf.register(fs.FlagSet)
	table := fs.String("audit-table", "", "DynamoDB audit table (default $"+startup.EnvAuditTable+")")
	verify := fs.Bool("verify", false, "check the chain: every entry there, none edited")
	id, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *table == "" {
		*table = getenv(startup.EnvAuditTable)
	}
	if *table == "" {
		return usagef("no audit table: give --audit-table (or set %s)", startup.EnvAuditTable)
	}
	sf.table, sf.dir = *table, ""
	ctx, s, cancel, err := openBounded(ctx, sf, getenv)
	if err != nil {
		return err
	}
	defer cancel()
	as := audit.New(s.api, *table)
	if !*verify {
		entries, err := as.List(ctx, id)
		if err != nil {
			return s.fail(ctx, err)
		}
		if entries == nil {
			entries = []audit.Entry{}
		}
		return writeJSON(stdout, entries)
	}
	r, err := as.Verify(ctx, id)
	if err != nil {
		return s.fail(ctx, err)
	}
	if r.Problems == nil {
		r.Problems = []audit.Problem{}
	}
	if err := writeJSON(stdout, r); err != nil {
		return err
	}
	if !r.OK() {
		return failf("the audit chain of %q is broken: %d problems (first: entry %d %s)", id, len(r.Problems), r.Problems[0].Seq, r.Problems[0].Kind)
	}
	return nil
}
