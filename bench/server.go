package bench

import (
	"context"
	"net"
	"net/http"
	"time"
)

// Server is an HTTP server on a loopback port.
type Server struct {
	URL string // http://127.0.0.1:PORT
	srv *http.Server
}

// Serve starts h on a free loopback port; the caller must Close it.
func Serve(h http.Handler) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + l.Addr().String(), srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

// Close stops the server, giving handlers a second to return.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if s.srv.Shutdown(ctx) != nil {
		_ = s.srv.Close()
	}
}
