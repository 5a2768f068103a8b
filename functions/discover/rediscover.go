package main

import (
	"context"
	"errors"
	"net/url"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/text"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// server is the MCP server a request discovers, checked against the
// egress policy: its server_url, or for a re-discovery (no server_url)
// the URL the catalog's head keeps sealed (Store.ServerURL). A catalog
// that keeps none is an invalid_request_error; a stored URL the policy
// now refuses is refused naming its origin only.
func (h *Handler) server(ctx context.Context, it *runner.Item, req Request) (*url.URL, string, error) {
	if req.ServerURL != "" {
		u, err := wire.CheckServerURL(req.ServerURL, h.Policy)
		return u, req.ServerURL, err
	}
	raw, err := h.Store.ServerURL(ctx, req.CatalogID)
	switch {
	case errors.Is(err, catalog.ErrNoServerURL):
		return nil, "", wire.Errorf(wire.InvalidRequest, err, "server_url is required")
	case err != nil:
		return nil, "", wire.Errorf(wire.Internal, err, "could not open the server URL catalog %q keeps", req.CatalogID)
	}
	u, err := wire.CheckServerURL(raw, h.Policy)
	if err != nil {
		return nil, "", wire.Errorf(wire.TypeOf(err), nil, "the server URL catalog %q keeps (%s) is refused: %s", req.CatalogID, text.Origin(raw), wire.TypeOf(err))
	}
	return u, raw, nil
}

// recordable reports whether a failed discovery is recorded on its
// catalog: not when the request named no usable server.
func recordable(err error) bool {
	if wire.TypeOf(err) != wire.InvalidRequest {
		return true
	}
	return !errors.Is(err, guard.ErrBadURL) && !errors.Is(err, catalog.ErrNoServerURL)
}
