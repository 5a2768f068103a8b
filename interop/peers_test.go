package interop

import "testing"

// Peer launchers. Each binds 127.0.0.1 on a port the kernel picks.

func startEverything(t *testing.T) *peer {
	return startPeer(t, everythingJS, "streamableHttp")
}

func startTS2(t *testing.T) *peer { return startPeer(t, "js/ts2-server.mjs") }

func startTS1(t *testing.T) *peer { return startPeer(t, "js/ts1-server.mjs") }
