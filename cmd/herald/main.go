// Command herald runs the outbox relay and its operator tooling.
package main

import (
	"os"

	"github.com/herald-outbox/herald/cmd/herald/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
