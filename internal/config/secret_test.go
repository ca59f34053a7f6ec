package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadPasswordFile: one trailing line break is dropped; a missing or
// empty file is an error naming the file, not Go's operation.
func TestReadPasswordFile(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name, content, want, err string
	}{
		{"plain", "s3cret", "s3cret", ""},
		{"line break", "s3cret\n", "s3cret", ""},
		{"crlf", "s3cret\r\n", "s3cret", ""},
		{"two line breaks", "s3cret\n\n", "s3cret\n", ""},
		{"empty", "\n", "", "the file is empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
			if err := os.WriteFile(file, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := ReadPasswordFile(file)
			if tt.err != "" {
				if err == nil || err.Error() != file+": "+tt.err {
					t.Fatalf("error %v, want %q", err, file+": "+tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("read %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	missing := filepath.Join(dir, "missing")
	if _, err := ReadPasswordFile(missing); err == nil || err.Error() != missing+": no such file or directory" {
		t.Errorf("missing file: %v, want %q", err, missing+": no such file or directory")
	}
}
