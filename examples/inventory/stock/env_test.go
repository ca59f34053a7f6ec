package stock_test

import (
	"strings"
	"testing"

	"github.com/herald-outbox/herald/examples/inventory/stock"
)

// TestEnvFromChecksTopicNames: HERALD_INVENTORY_TOPICS is checked against
// Kafka's rule for topic names, as herald's own --topic routes are, and
// the error names the variable.
func TestEnvFromChecksTopicNames(t *testing.T) {
	env := func(topics string) func(string) string {
		return func(name string) string {
			if name == "HERALD_INVENTORY_TOPICS" {
				return topics
			}
			return ""
		}
	}
	e, err := stock.EnvFrom(env("orders.v1, orders.v1.replay"))
	if err != nil || len(e.Config.Topics) != 2 {
		t.Fatalf("valid topics: %+v, %v", e.Config.Topics, err)
	}
	for _, bad := range []string{"qa bad!", "orders.v1,..", strings.Repeat("t", 250)} {
		if _, err := stock.EnvFrom(env(bad)); err == nil || !strings.Contains(err.Error(), "HERALD_INVENTORY_TOPICS") {
			t.Errorf("HERALD_INVENTORY_TOPICS=%q: %v, want an error naming the variable", bad, err)
		}
	}
}
