package startup

import (
	"context"
	"errors"
	"io"
	"log/slog"
)

// ErrorType is the error_type of an init failure's log line
// (docs/errors.md, configuration_error).
const ErrorType = "configuration_error"

// Fail writes the one JSON line an init failure prints to out (stdout in
// main, which then exits non-zero): level ERROR, msg err's message,
// error_type ErrorType, service and function the function's name,
// cold_start true, and the variables a *ConfigError in err names.
func Fail(out io.Writer, function string, err error) {
	attrs := []slog.Attr{
		slog.String("service", function),
		slog.String("function", function),
		slog.Bool("cold_start", true),
		slog.String("error_type", ErrorType),
	}
	if ce, ok := errors.AsType[*ConfigError](err); ok && len(ce.Variables) > 0 {
		attrs = append(attrs, slog.Any("variables", ce.Variables))
	}
	NewLogger(out, slog.LevelError).LogAttrs(context.Background(), slog.LevelError, err.Error(), attrs...)
}
