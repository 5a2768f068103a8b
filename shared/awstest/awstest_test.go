package awstest

import (
	"net/http"
	"os"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func TestSharedMotoIsOneServer(t *testing.T) {
	first := SharedMoto(t)
	t.Run("again", func(t *testing.T) {
		if again := SharedMoto(t); again != first {
			t.Errorf("SharedMoto = %s, then %s; want one server", first.Endpoint(), again.Endpoint())
		}
	})
	resp, err := http.Get(first.Endpoint() + "/moto-api/")
	if err != nil {
		t.Fatalf("shared server does not answer: %v", err)
	}
	resp.Body.Close()
}
