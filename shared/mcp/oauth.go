package mcp

import (
	"context"
	"errors"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// errAuthorizedOnce answers the SDK's second Authorize in one operation.
var errAuthorizedOnce = errors.New("mcp: authorized once in this operation already")

// onceAuthorizer hands the SDK Config.OAuth with Authorize called at most
// once per operation, its error kept for the operation's outcome.
type onceAuthorizer struct {
	next auth.OAuthHandler
	tr   *transport
}

// authorizer is the OAuthHandler the SDK gets: nil without Config.OAuth.
func (c *Conn) authorizer() auth.OAuthHandler {
	if c.oauth == nil {
		return nil
	}
	return &onceAuthorizer{next: c.oauth, tr: c.tr}
}

func (a *onceAuthorizer) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	return a.next.TokenSource(ctx)
}

func (a *onceAuthorizer) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	op, first := a.tr.authorizing()
	if !first {
		resp.Body.Close()
		return errAuthorizedOnce
	}
	err := a.next.Authorize(ctx, req, resp)
	if err != nil {
		a.tr.authorizeFailed(op, err)
	}
	return err
}
