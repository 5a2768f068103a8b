package work

import (
	"context"
	"fmt"
	"reflect"

	"github.com/mcpfn/mcpfn/shared/mcp"
)

// ConnectFunc opens an MCP connection and returns it as C, the consumer's
// interface for the part of a connection it uses.
type ConnectFunc[C any] func(ctx context.Context, cfg mcp.Config) (C, error)

// ConnectMCP is the ConnectFunc of package mcp: the *mcp.Conn of
// mcp.Connect as C. On error C is its zero value (a nil interface, never a
// typed nil). A C that *mcp.Conn does not implement closes the connection
// and returns an error; declare var _ C = (*mcp.Conn)(nil) next to C.
func ConnectMCP[C any](ctx context.Context, cfg mcp.Config) (C, error) {
	var zero C
	c, err := mcp.Connect(ctx, cfg)
	if err != nil {
		return zero, err
	}
	conn, ok := any(c).(C)
	if !ok {
		_ = c.Close()
		return zero, fmt.Errorf("work: *mcp.Conn does not implement %v", reflect.TypeFor[C]())
	}
	return conn, nil
}
