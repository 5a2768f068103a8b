package oauth

import (
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
)

func TestAssertionAudience(t *testing.T) {
	tests := []struct {
		ep   Endpoint
		want jwt.ClaimStrings
	}{
		{Endpoint{TokenURL: "https://as.example/token"}, jwt.ClaimStrings{"https://as.example/token"}},
		{Endpoint{TokenURL: "https://as.example/token", Issuer: "https://as.example"}, jwt.ClaimStrings{"https://as.example", "https://as.example/token"}},
		{Endpoint{TokenURL: "https://as.example", Issuer: "https://as.example"}, jwt.ClaimStrings{"https://as.example"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, audience(tt.ep)); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", tt.ep, diff)
		}
	}
}
