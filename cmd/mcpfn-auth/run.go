package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mcpfn/mcpfn/shared/awsconf"
	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/onboard"
	"github.com/mcpfn/mcpfn/shared/text"
	"github.com/mcpfn/mcpfn/shared/vault"
)

// Exit statuses.
const (
	exitOK    = 0 // the credential is written, or -h printed the usage
	exitFail  = 1 // the flow, the listing or the write failed
	exitUsage = 2 // bad usage
	exitStore = 3 // the vault store cannot be used (no AWS region)
)

// options are the command's flags.
type options struct {
	vaultID, prefix, endpoint, file string
	clientID, clientSecret          string
	clientMetadataURL, scope        string
	port                            int
	noBrowser                       bool
	timeout                         time.Duration
	serverURL                       string
}

// parse reads the flags. On -h it prints the usage to stdout and returns
// flag.ErrHelp; the flag package itself prints nothing.
func parse(args []string, getenv func(string) string, stdout io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("mcpfn-auth", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	prefix := getenv("MCPFN_SECRETS_PREFIX")
	if prefix == "" {
		prefix = "mcpfn/vaults/"
	}
	fs.StringVar(&o.vaultID, "vault", "", "vault id to write the credential to (required)")
	fs.StringVar(&o.prefix, "secrets-prefix", prefix, "Secrets Manager name prefix of the vaults (MCPFN_SECRETS_PREFIX)")
	fs.StringVar(&o.endpoint, "endpoint", "", "Secrets Manager endpoint URL (a local emulator)")
	fs.StringVar(&o.file, "file", "", "write the vault to this local JSON file instead of Secrets Manager")
	fs.StringVar(&o.clientID, "client-id", "", "a pre-registered client's id")
	fs.StringVar(&o.clientSecret, "client-secret", "", "a pre-registered client's secret (empty for a public client)")
	fs.StringVar(&o.clientMetadataURL, "client-metadata-url", "", "the client's ID metadata document URL")
	fs.StringVar(&o.scope, "scope", "", "space-separated scopes to request instead of those the server names")
	fs.IntVar(&o.port, "port", 0, "loopback port of the redirect (0: any free port; a pre-registered client needs its registered one)")
	fs.BoolVar(&o.noBrowser, "no-browser", false, "print the authorization URL without opening a browser")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "how long to wait for the whole flow")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		printUsage(stdout, fs)
		return o, err
	} else if err != nil {
		return o, err
	}
	if fs.NArg() != 1 {
		return o, errors.New("want exactly one SERVER_URL after the flags")
	}
	o.serverURL = fs.Arg(0)
	if err := vault.ValidateVaultID(o.vaultID); err != nil {
		return o, fmt.Errorf("-vault: %w", err)
	}
	if o.port < 0 || o.port > 65535 {
		return o, fmt.Errorf("-port %d: want 0 to 65535", o.port)
	}
	return o, nil
}

// run onboards the server args name and returns the exit status. It
// writes the browser prompt and progress to stdout and errors to stderr,
// never a token.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o, err := parse(args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	} else if err != nil {
		fmt.Fprintf(stderr, "mcpfn-auth: %v (mcpfn-auth -h)\n", err)
		return exitUsage
	}
	allow, err := guard.ParseAllowList(getenv(guard.EnvAllowList))
	if err == nil {
		var p *guard.Policy
		if p, err = guard.NewPolicy(allow...); err == nil {
			guard.SetDefault(p)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcpfn-auth: %s: %v\n", guard.EnvAllowList, err)
		return exitUsage
	}
	store, err := openStore(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "mcpfn-auth: %v\n", err)
		return exitStore
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	var open func(string) error
	if !o.noBrowser {
		open = openBrowser
	}
	if err := onboardServer(ctx, o, store, open, stdout, stderr); err != nil {
		// Origins only: the server URL's path may hold a key, and the
		// server's challenge and metadata URLs are hostile text.
		fmt.Fprintf(stderr, "mcpfn-auth: %s\n", text.OriginsOnly(err.Error()))
		return exitFail
	}
	return exitOK
}

// onboardServer runs the flow, checks the token with a listing, and
// writes the credential exactly as granted, warning on warn when its
// access token lives under a minute.
func onboardServer(ctx context.Context, o options, store vaultStore, open func(string) error, out, warn io.Writer) error {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", o.port))
	if err != nil {
		return fmt.Errorf("redirect listener: %w", err)
	}
	defer ln.Close()
	client := guard.NewClient(mcp.DialTimeout)
	var scopes []string
	if o.scope != "" {
		scopes = strings.Fields(o.scope)
	}
	flow, err := onboard.New(onboard.Options{
		Client:            client,
		RedirectURL:       fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port),
		Fetch:             onboard.Browser(ln, open, out),
		ClientID:          o.clientID,
		ClientSecret:      o.clientSecret,
		ClientMetadataURL: o.clientMetadataURL,
		ClientName:        "mcpfn",
		Scopes:            scopes,
	})
	if err != nil {
		return err
	}
	conn, err := mcp.Connect(ctx, mcp.Config{URL: o.serverURL, OAuth: flow.Handler()})
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	listing, err := conn.ListTools(ctx)
	conn.Close()
	if err != nil {
		return fmt.Errorf("list tools: %w", err)
	}
	g, err := flow.Grant()
	if err != nil {
		return fmt.Errorf("the server let us in without authorizing (no OAuth needed): %w", err)
	}
	if err := writeCredential(ctx, store, o.vaultID, o.serverURL, g); err != nil {
		return err
	}
	if left := time.Until(g.ExpiresAt); !g.ExpiresAt.IsZero() && left < shortLifetime {
		life := "lives " + left.Round(time.Second).String()
		if left <= 0 {
			life = "expired " + (-left).Round(time.Second).String() + " before it arrived"
		}
		fmt.Fprintf(warn, "mcpfn-auth: warning: the access token granted %s, under %s; it is written as granted, %s\n",
			life, shortLifetime, shortNote(g))
	}
	fmt.Fprintf(out, "authorized: %d tools listed; the mcp_oauth credential for %s is in vault %s (%s)\n",
		len(listing.Tools), text.Origin(o.serverURL), o.vaultID, refreshNote(g))
	return nil
}

// shortLifetime is the access-token lifetime below which the command warns.
const shortLifetime = time.Minute

func shortNote(g onboard.Grant) string {
	if g.RefreshToken == "" {
		return "and without a refresh token the credential stops working then"
	}
	return "and the functions refresh it at its first use"
}

func refreshNote(g onboard.Grant) string {
	if g.RefreshToken == "" {
		return "no refresh token: it works until the access token expires"
	}
	return "with a refresh token"
}

// openBrowser opens url with the platform's opener.
func openBrowser(url string) error {
	name := "xdg-open"
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		return exec.Command("rundll32", "url.dll,FileProtocolHandler", url).Start()
	}
	return exec.Command(name, url).Start()
}

// openStore is the vault the credential goes to.
func openStore(ctx context.Context, o options) (vaultStore, error) {
	if o.file != "" {
		return fileStore{path: o.file}, nil
	}
	cfg, err := awsconf.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("no AWS region: set AWS_REGION (or a region in the AWS profile), or write a local file with -file")
	}
	api := secretsmanager.NewFromConfig(cfg, func(so *secretsmanager.Options) {
		if o.endpoint != "" {
			so.BaseEndpoint = aws.String(o.endpoint)
		}
	})
	return secretsStore{api: api, prefix: o.prefix}, nil
}
