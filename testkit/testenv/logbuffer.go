package testenv

import (
	"bytes"
	"sync"
)

// LogBuffer is a bytes.Buffer that a logger's goroutines and the test may
// use at once: where a test collects the log lines of a relay or a reader
// running in its process.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
