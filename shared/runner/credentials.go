package runner

import "log/slog"

// LogAttrs returns the attributes that name it in a log line: request_id,
// work_item and server (shared/credentials logs its hints with them).
func (it *Item) LogAttrs() []slog.Attr {
	return []slog.Attr{slog.String("request_id", it.RequestID), slog.String("work_item", it.ID), slog.String("server", it.Server())}
}
