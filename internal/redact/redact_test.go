package redact

import (
	"strings"
	"testing"
)

func TestSecrets(t *testing.T) {
	tests := []struct {
		name, in, secret string
	}{
		{"mysql dsn", "dial herald:s3cr3t-pw@tcp(127.0.0.1:3306)/herald failed", "s3cr3t-pw"},
		{"url", "GET https://bob:hunter2@api.example.com/x: 401", "hunter2"},
		{"bearer", "Authorization: Bearer eyJhbGciOi.payload.sig rejected", "eyJhbGciOi.payload.sig"},
		{"password pair", "connect: user=app password=topsecret host=db", "topsecret"},
		{"quoted password", `config {"password": "qu ot ed"}`, "qu ot ed"},
		{"sasl secret", "SASL handshake: sasl_password=kafka-pw; mechanism=PLAIN", "kafka-pw"},
		{"sasl plain dotted key", "sasl.plain.password=abc123 failed", "abc123"},
		{"token", "token: abcdef0123 expired", "abcdef0123"},
		{"api key", "api_key=AKIA1234", "AKIA1234"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Secrets(tt.in)
			if strings.Contains(got, tt.secret) {
				t.Errorf("Secrets(%q) = %q still contains %q", tt.in, got, tt.secret)
			}
			if !strings.Contains(got, mask) {
				t.Errorf("Secrets(%q) = %q: nothing masked", tt.in, got)
			}
		})
	}
	plain := "broker 127.0.0.1:9092: connection refused"
	if got := Secrets(plain); got != plain {
		t.Errorf("Secrets changed a harmless message: %q", got)
	}
}

func TestTruncate(t *testing.T) {
	if got := Truncate(strings.Repeat("é", 1200), 1000); len([]rune(got)) != 1000 {
		t.Errorf("Truncate kept %d runes, want 1000", len([]rune(got)))
	}
	if got := Truncate("short", 1000); got != "short" {
		t.Errorf("Truncate changed a short string: %q", got)
	}
}

func TestTruncateCountsCharactersNotBytes(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"", 3, ""},
		{"abc", 0, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc"},
		{"ééé", 3, "ééé"},  // 6 bytes, 3 characters: kept
		{"éééé", 3, "ééé"}, // cut after the third character
		{"a😀b", 2, "a😀"},   // a 4-byte character is never split
	}
	for _, tt := range tests {
		if got := Truncate(tt.in, tt.max); got != tt.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}
