package main

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/onboard"
)

// The auth scenarios' client identity: the suite's authorization servers
// approve at once and redirect to redirectURL, which nothing serves (the
// headless fetcher reads the code from the redirect); clientMetadataURL is
// the client ID metadata document the CIMD scenario expects.
const (
	redirectURL       = "http://localhost:3000/callback"
	clientMetadataURL = "https://conformance-test.local/client-metadata.json"
)

// authorizer returns the OAuth handler of an auth/* scenario: the
// onboarding flow mcpfn-auth runs, headless, with the pre-registered
// client the suite's context names, if any.
func authorizer(scenarioCtx json.RawMessage) (auth.OAuthHandler, error) {
	var c struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if len(scenarioCtx) > 0 {
		if err := json.Unmarshal(scenarioCtx, &c); err != nil {
			return nil, fmt.Errorf("%s: %w", envContext, err)
		}
	}
	client := guard.NewClient(mcp.DialTimeout)
	f, err := onboard.New(onboard.Options{
		Client:            client,
		RedirectURL:       redirectURL,
		Fetch:             onboard.Headless(client),
		ClientID:          c.ClientID,
		ClientSecret:      c.ClientSecret,
		ClientMetadataURL: clientMetadataURL,
	})
	if err != nil {
		return nil, err
	}
	return f.Handler(), nil
}
