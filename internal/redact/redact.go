package redact

import "regexp"

const mask = "REDACTED"

var patterns = []struct {
	re   *regexp.Regexp
	repl string
}{
	// Go MySQL DSN: user:password@tcp(host)/db, user:password@unix(...)
	{regexp.MustCompile(`([A-Za-z0-9_.\-]+):[^@\s/]+@(tcp|unix|tcp6)\(`), "${1}:" + mask + "@${2}("},
	// URL user info: scheme://user:password@host
	{regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.\-]*://[^:/@\s]+):[^@\s]+@`), "${1}:" + mask + "@"},
	// HTTP-style credentials: Bearer / Basic tokens
	{regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]+`), "${1} " + mask},
	// key=value and key: value pairs whose key names a secret
	{regexp.MustCompile(`(?i)\b([a-z0-9_.\-]*(password|passwd|pwd|secret|token|api[_\-]?key|access[_\-]?key|credentials?|sasl[_.\-]?[a-z]*)"?)(\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s,;&)]+)`), "${1}${3}" + mask},
}

// Secrets returns s with DSN passwords, URL passwords, bearer and basic
// tokens, and password=/secret=/token= style values replaced by REDACTED.
func Secrets(s string) string {
	for _, p := range patterns {
		s = p.re.ReplaceAllString(s, p.repl)
	}
	return s
}

// Truncate cuts s to at most max characters (runes, as a VARCHAR counts
// them), never inside one.
func Truncate(s string, max int) string {
	n := 0
	for i := range s {
		if n == max {
			return s[:i]
		}
		n++
	}
	return s
}
