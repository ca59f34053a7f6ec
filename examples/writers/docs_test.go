package writers_test

import (
	"testing"

	"github.com/herald-outbox/herald/testkit/testenv"
)

// snippetFiles are the files docs/writers.md shows, each in full.
var snippetFiles = []string{
	"examples/writers/orders.mysql.sql", "examples/writers/orders.postgres.sql",
	"examples/writers/php/orders.php", "examples/writers/php/laravel.php",
	"examples/writers/python/orders.py", "examples/writers/java/Orders.java",
	"examples/writers/node/orders-mysql2.js", "examples/writers/node/orders-pg.js",
	"examples/writers/gosql/orders.go",
}

// consumerFiles are the files docs/consumers.md shows, each in full (the
// consumer test, examples/consumers, runs them).
var consumerFiles = []string{
	"examples/consumers/python/consumer.py",
	"examples/consumers/effects.mysql.sql", "examples/consumers/effects.postgres.sql",
}

// TestDocsShowTheSnippets: docs/writers.md and docs/consumers.md show every
// snippet the writers and consumer tests run, verbatim, and nothing else
// under a snippet marker.
func TestDocsShowTheSnippets(t *testing.T) {
	testenv.CheckDocSnippets(t, "docs/writers.md", snippetFiles)
	testenv.CheckDocSnippets(t, "docs/consumers.md", consumerFiles)
}
