package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/startup"
)

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// defaultTimeout bounds one command's reads of the store.
const defaultTimeout = 30 * time.Second

// formatAnthropic is the one output format of tools.
const formatAnthropic = "anthropic"

const usage = `usage:
  mcpfn-catalog get [store flags] ID
  mcpfn-catalog tools [store flags] [--format anthropic] [--allow GLOB]... [--deny GLOB]... [--read-only] ID
  mcpfn-catalog changes [store flags] ID

store flags: --table NAME [--endpoint URL] | --dir PATH, and --timeout DURATION.
Without --table or --dir: ` + startup.EnvCatalogTable + `, then ` + startup.EnvCatalogDir + `.
Flags come before the ID.
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
	fs.DurationVar(&s.timeout, "timeout", defaultTimeout, "bound on reading the store")
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

// run executes the subcommand in args, writing its JSON to stdout and
// diagnostics to stderr, and returns the exit status. getenv supplies
// MCPFN_CATALOG_TABLE and MCPFN_CATALOG_DIR.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	var err error
	switch sub, rest := args[0], args[1:]; sub {
	case "get":
		err = runGet(ctx, rest, stdout, stderr, getenv)
	case "tools":
		err = runTools(ctx, rest, stdout, stderr, getenv)
	case "changes":
		err = runChanges(ctx, rest, stdout, stderr, getenv)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "mcpfn-catalog: unknown command %q\n%s", sub, usage)
		return exitUsage
	}
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue), errors.Is(err, catalog.ErrInvalidID):
		fmt.Fprintf(stderr, "mcpfn-catalog: %s: %v\n", args[0], err)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "mcpfn-catalog: %s: %v\n", args[0], err)
		return exitFail
	}
}

func runGet(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	c, _, err := readCommand(ctx, "get", args, stderr, getenv)
	if err != nil {
		return err
	}
	return writeJSON(stdout, catalogOutput(c))
}

// readCommand parses a command that takes only the store flags and an ID,
// and reads that catalog.
func readCommand(ctx context.Context, name string, args []string, stderr io.Writer, getenv func(string) string) (*catalog.Catalog, string, error) {
	fs := newFlagSet(name, stderr)
	var sf storeFlags
	sf.register(fs)
	id, err := parse(fs, args)
	if err != nil {
		return nil, "", err
	}
	c, err := read(ctx, sf, getenv, id)
	return c, id, err
}

// runChanges prints the current version's diff against the version it
// replaced, in the discover result's changes shape.
func runChanges(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	c, id, err := readCommand(ctx, "changes", args, stderr, getenv)
	switch {
	case err != nil:
		return err
	case c.Version == "":
		return fmt.Errorf("catalog %q has no stored version (its discoveries failed)", id)
	case c.Changes == nil:
		return fmt.Errorf("catalog %q: version %s was stored before diffs were kept", id, c.Version)
	}
	return writeJSON(stdout, c.Changes)
}

func runTools(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := newFlagSet("tools", stderr)
	var sf storeFlags
	sf.register(fs)
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
	return writeJSON(stdout, anthropicTools(f.apply(c.Tools)))
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("mcpfn-catalog "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parse parses fs from args and returns the one ID after the flags. A
// flag error is a usage error (flag has printed it and the defaults);
// flag.ErrHelp is returned as is.
func parse(fs *flag.FlagSet, args []string) (string, error) {
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return "", err
	} else if err != nil {
		return "", usageError{err.Error()}
	}
	switch rest := fs.Args(); {
	case len(rest) == 0:
		return "", usagef("want a catalog ID after the flags")
	case len(rest) > 1:
		return "", usagef("want one catalog ID, got %q (flags come before the ID)", rest)
	}
	return fs.Arg(0), nil
}

// read opens the store sf chooses and gets id, within sf.timeout. A
// missing catalog is reported as such.
func read(ctx context.Context, sf storeFlags, getenv func(string) string, id string) (*catalog.Catalog, error) {
	if err := catalog.ValidateID(id); err != nil {
		return nil, err
	}
	if sf.timeout <= 0 {
		return nil, usagef("--timeout %s: want a positive duration", sf.timeout)
	}
	ctx, cancel := context.WithTimeout(ctx, sf.timeout)
	defer cancel()
	s, err := open(ctx, sf, getenv)
	if err != nil {
		return nil, err
	}
	c, err := s.Get(ctx, id)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, fmt.Errorf("catalog %q not found", id)
	}
	return c, err
}

// open returns the store sf names: flags first, then the functions'
// environment variables. A directory store must already exist.
func open(ctx context.Context, sf storeFlags, getenv func(string) string) (getter, error) {
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
			return nil, fmt.Errorf("directory store: %w", err)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("directory store %s: not a directory", dir)
		}
		return catalog.NewDir(dir)
	}
	var opts []func(*dynamodb.Options)
	if sf.endpoint != "" {
		if u, err := url.Parse(sf.endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, usagef("--endpoint %q: want an http or https URL", sf.endpoint)
		}
		opts = append(opts, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(sf.endpoint) })
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	return catalog.NewDynamo(dynamodb.NewFromConfig(cfg, opts...), table), nil
}
