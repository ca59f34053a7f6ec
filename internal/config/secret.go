package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// ReadPasswordFile reads a password kept in a file, dropping one trailing
// line break. Its errors name the file and the problem, without Go's
// operation prefix, and never the file's contents.
func ReadPasswordFile(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("%s: %v", file, err)
	}
	pw := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if pw == "" {
		return "", fmt.Errorf("%s: the file is empty", file)
	}
	return pw, nil
}
