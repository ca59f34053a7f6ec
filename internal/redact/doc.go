// Package redact removes credentials from text before it reaches a log line,
// an outbox row's last_error or a dead-letter header.
//
// Start at Secrets; Truncate bounds a text to last_error's width.
package redact
