package main

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/mcpfn/mcpfn/shared/catalog"
)

// exitError is a failure the command prints as one line and exits with
// code.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

// failf is a catalog that is not there (exit 1).
func failf(format string, args ...any) error {
	return exitError{exitFail, fmt.Sprintf(format, args...)}
}

// storeErrorf is a store that cannot be read (exit 3).
func storeErrorf(format string, args ...any) error {
	return exitError{exitStore, fmt.Sprintf(format, args...)}
}

// explain is the one line run prints for err, and the exit status.
func explain(err error) (string, int) {
	var ee exitError
	var ue usageError
	switch {
	case errors.As(err, &ee):
		return ee.msg, ee.code
	case errors.As(err, &ue), errors.Is(err, catalog.ErrInvalidID):
		return oneLine(err), exitUsage
	}
	return oneLine(err), exitStore
}

// cause is the network error under err ("dial tcp 127.0.0.1:1: connect:
// connection refused"), else err as one line.
func cause(err error) string {
	if op := (*net.OpError)(nil); errors.As(err, &op) {
		return op.Error()
	}
	if dns := (*net.DNSError)(nil); errors.As(err, &dns) {
		return dns.Error()
	}
	return oneLine(err)
}

// isNetwork reports whether err failed to reach its peer.
func isNetwork(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &op) || errors.As(err, &dns)
}

// oneLine is err's text with its line breaks replaced by spaces.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
