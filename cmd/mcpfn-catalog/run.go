package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/startup"
)

// Exit statuses (usage text and docs/contract.md).
const (
	exitOK    = 0 // the JSON is on stdout, or -h printed the usage
	exitFail  = 1 // the catalog is not found, its version is missing, or it has no version to diff
	exitUsage = 2 // bad usage: one line on stderr
	exitStore = 3 // the store cannot be read: missing table or directory, no region, unreachable within --timeout
)

// defaultTimeout bounds one command's reads of the store, retries included.
const defaultTimeout = 5 * time.Second

// formatAnthropic is the one output format of tools.
const formatAnthropic = "anthropic"

const usage = `Usage:
  mcpfn-catalog list    [store flags]
  mcpfn-catalog get     [store flags] ID
  mcpfn-catalog tools   [store flags] [--format anthropic] [--allow GLOB]... [--deny GLOB]... [--read-only] ID
  mcpfn-catalog changes [store flags] ID
  mcpfn-catalog policy  set [store flags] --file FILE ID | get [store flags] ID | delete [store flags] ID
  mcpfn-catalog audit   [store flags] [--audit-table NAME] [--verify] ID
  mcpfn-catalog approve [store flags] ID (--tool NAME... | --all) [--by WHO] [--audit-table NAME]
  mcpfn-catalog COMMAND -h

Prints stored tool catalogs as JSON: every catalog's head and schedule (list,
a table only), one catalog (get), its tools for the Anthropic Messages API
(tools), or what its current version changed (changes); sets, prints or
deletes a catalog's policy document (policy, a table only); prints its
audit trail or checks its chain (audit, the audit table); approves
quarantined tools (approve, a table only). tools leaves quarantined tools
out and says on stderr how many.

Store flags: --table NAME [--endpoint URL] | --dir PATH, and --timeout
DURATION (default 5s). Without --table or --dir: ` + startup.EnvCatalogTable + `, then
` + startup.EnvCatalogDir + `. Flags come before the ID.
` + exitStatuses

const exitStatuses = `
Exit status:
  0  printed (or -h)
  1  the catalog is not found, its version is missing, or it has no version to diff
  2  bad usage
  3  the store cannot be read: a missing table or directory, no AWS region,
     an endpoint unreachable or silent within --timeout
`

// getter is the part of a catalog store the command reads.
type getter interface {
	Get(ctx context.Context, id string) (*catalog.Catalog, error)
}

var (
	_ getter = (*catalog.Dynamo)(nil)
	_ getter = (*catalog.Dir)(nil)
)

// storeFlags are the flags every subcommand that reads a catalog takes.
type storeFlags struct {
	table, endpoint, dir string
	timeout              time.Duration
}

func (s *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.table, "table", "", "DynamoDB catalog table (default $"+startup.EnvCatalogTable+")")
	fs.StringVar(&s.endpoint, "endpoint", "", "DynamoDB endpoint URL, e.g. a local moto server (with --table)")
	fs.StringVar(&s.dir, "dir", "", "directory store (default $"+startup.EnvCatalogDir+" when no table is set)")
	fs.DurationVar(&s.timeout, "timeout", defaultTimeout, "bound on reading the store, retries included")
}

// globs is a repeatable flag of path.Match patterns, each checked when set.
type globs []string

func (g *globs) String() string { return strings.Join(*g, ",") }

func (g *globs) Set(p string) error {
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("%q: %w", p, err)
	}
	*g = append(*g, p)
	return nil
}

// usageError is bad usage: the command prints it and exits 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// run executes the subcommand in args, writing its JSON (or the usage
// for -h) to stdout and one line of diagnostics to stderr, and returns
// the exit status. getenv supplies MCPFN_CATALOG_TABLE and
// MCPFN_CATALOG_DIR.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "mcpfn-catalog: want a command: list, get, tools, changes, policy, audit or approve (mcpfn-catalog -h)")
		return exitUsage
	}
	var err error
	switch sub, rest := args[0], args[1:]; sub {
	case "list":
		err = runList(ctx, rest, stdout, getenv)
	case "get":
		err = runGet(ctx, rest, stdout, getenv)
	case "tools":
		err = runTools(ctx, rest, stdout, stderr, getenv)
	case "approve":
		err = runApprove(ctx, rest, stdout, stderr, getenv)
	case "changes":
		err = runChanges(ctx, rest, stdout, getenv)
	case "policy":
		err = runPolicy(ctx, rest, stdout, os.Stdin, getenv)
	case "audit":
		err = runAudit(ctx, rest, stdout, getenv)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "mcpfn-catalog: unknown command %q (mcpfn-catalog -h)\n", sub)
		return exitUsage
	}
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	msg, code := explain(err)
	fmt.Fprintf(stderr, "mcpfn-catalog: %s: %s\n", args[0], msg)
	return code
}

// readCommand parses a command that takes only the store flags and an ID,
// and reads that catalog.
func readCommand(ctx context.Context, name string, args []string, stdout io.Writer, getenv func(string) string) (*catalog.Catalog, string, error) {
	fs := newFlagSet(name, stdout)
	var sf storeFlags
	sf.register(fs.FlagSet)
	id, err := parse(fs, args)
	if err != nil {
		return nil, "", err
	}
	c, err := read(ctx, sf, getenv, id)
	return c, id, err
}

// runChanges prints the current version's diff against the version it
// replaced, in the discover result's changes shape.
func runChanges(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	c, id, err := readCommand(ctx, "changes", args, stdout, getenv)
	switch {
	case err != nil:
		return err
	case c.Version == "":
		return failf("catalog %q has no stored version (its discoveries failed)", id)
	case c.Changes == nil:
		return failf("catalog %q: version %s was stored before diffs were kept", id, c.Version)
	}
	return writeJSON(stdout, c.Changes)
}

func runTools(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := newFlagSet("tools", stdout)
	var sf storeFlags
	sf.register(fs.FlagSet)
	var f filter
	format := fs.String("format", formatAnthropic, "output format: anthropic (the Messages API tools array)")
	fs.Var((*globs)(&f.allow), "allow", "keep only tools whose name matches this path.Match glob (repeatable)")
	fs.Var((*globs)(&f.deny), "deny", "drop tools whose name matches this path.Match glob (repeatable)")
	fs.BoolVar(&f.readOnly, "read-only", false, "keep only tools annotated readOnlyHint: true")
	id, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *format != formatAnthropic {
		return usagef("--format %q: the only format is %s", *format, formatAnthropic)
	}
	c, err := read(ctx, sf, getenv, id)
	if err != nil {
		return err
	}
	tools, left := callable(c)
	if left > 0 {
		fmt.Fprintf(stderr, "mcpfn-catalog: tools: left out %d quarantined tools (mcpfn-catalog approve)\n", left)
	}
	return writeJSON(stdout, anthropicTools(f.apply(tools)))
}

// flagSet is a command's flags. The flag package prints nothing: -h
// prints the command's usage to stdout, and errors are returned for run
// to print once.
type flagSet struct {
	*flag.FlagSet
	name   string
	stdout io.Writer
}

func newFlagSet(name string, stdout io.Writer) *flagSet {
	fs := flag.NewFlagSet("mcpfn-catalog "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flagSet{fs, name, stdout}
}

// help prints the command's synopsis, flags and exit statuses.
func (fs *flagSet) help() {
	fmt.Fprintf(fs.stdout, "Usage:\n  %s\n\nFlags:\n", commandUsage[fs.name])
	fs.SetOutput(fs.stdout)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	fmt.Fprint(fs.stdout, exitStatuses)
}

// commandUsage is each command's synopsis.
var commandUsage = map[string]string{
	"list":          "mcpfn-catalog list [store flags]",
	"get":           "mcpfn-catalog get [store flags] ID",
	"tools":         "mcpfn-catalog tools [store flags] [--format anthropic] [--allow GLOB]... [--deny GLOB]... [--read-only] ID",
	"changes":       "mcpfn-catalog changes [store flags] ID",
	"policy set":    "mcpfn-catalog policy set [store flags] --file FILE ID",
	"policy get":    "mcpfn-catalog policy get [store flags] ID",
	"policy delete": "mcpfn-catalog policy delete [store flags] ID",
	"audit":         "mcpfn-catalog audit [store flags] [--audit-table NAME] [--verify] ID",
	"approve":       "mcpfn-catalog approve [store flags] ID (--tool NAME... | --all) [--by WHO] [--audit-table NAME]",
}

// parseFlags parses fs from args. A flag error is a usage error;
// flag.ErrHelp (after the usage is printed) is returned as is.
func parseFlags(fs *flagSet, args []string) error {
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fs.help()
		return err
	} else if err != nil {
		return usageError{err.Error()}
	}
	return nil
}

// parse parses fs from args and returns the one ID after the flags.
func parse(fs *flagSet, args []string) (string, error) {
	if err := parseFlags(fs, args); err != nil {
		return "", err
	}
	switch rest := fs.Args(); {
	case len(rest) == 0:
		return "", usagef("want a catalog ID after the flags")
	case len(rest) > 1:
		return "", usagef("want one catalog ID, got %q (flags come before the ID)", rest)
	}
	return fs.Arg(0), nil
}
