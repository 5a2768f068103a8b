package localstack

import (
	"net"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// TestAnsweredByUs: a port this process listens on is answered by this
// process and not by another one, which is how a started server that lost
// its port to another process is told apart (waitReady).
func TestAnsweredByUs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("who holds a port is read from Linux's /proc")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	running := make(chan struct{})
	if !answeredByUs(os.Getpid(), running, time.Hour, l.Addr().String()) {
		t.Error("this process's listener: not answered by this process")
	}
	l2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if !answeredByUs(os.Getpid(), running, time.Hour, l.Addr().String(), l2.Addr().String()) {
		t.Error("two listeners of this process: not both held by it")
	}
	l2.Close()
	if answeredByUs(os.Getpid(), running, time.Hour, l.Addr().String(), l2.Addr().String()) {
		t.Error("one listener closed: both held by this process")
	}
	if answeredByUs(other.Process.Pid, running, time.Hour, l.Addr().String()) {
		t.Error("this process's listener: answered by another process")
	}
	l.Close()
	if answeredByUs(os.Getpid(), running, time.Hour, l.Addr().String()) {
		t.Error("a closed listener: answered by this process")
	}
}
