package localstack

import (
	"testing"
	"time"
)

// TestProcessCPU: this process's CPU time grows while it computes, and a
// pid that does not exist is an error.
func TestProcessCPU(t *testing.T) {
	before, err := ProcessCPU("self")
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		now, err := ProcessCPU("self")
		if err != nil {
			t.Fatal(err)
		}
		if now >= before+50*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s of a busy loop: CPU time went from %v to %v", before, now)
		}
	}
	if _, err := ProcessCPU("0"); err == nil {
		t.Error("ProcessCPU of a pid that does not exist: no error")
	}
}

// TestDatabaseCPU: the stack's two database servers and its Kafka nodes,
// running since `make up`, have spent CPU time, read from their pid files
// and /proc.
func TestDatabaseCPU(t *testing.T) {
	for name, read := range map[string]func() (time.Duration, error){"MariaDB": MariaDBCPU, "PostgreSQL": PostgresCPU, "Kafka": KafkaCPU} {
		cpu, err := read()
		if err != nil || cpu <= 0 {
			t.Errorf("%s: %v CPU time, error %v; want some and no error", name, cpu, err)
		}
	}
}
