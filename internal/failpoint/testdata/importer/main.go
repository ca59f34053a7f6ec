// Command importer stands for a service that imports herald's library
// packages: it must start and run whatever HERALD_FAILPOINTS holds, since
// only herald's own binaries read that variable. It reaches every failpoint
// (as a relay, a consumer and the orders API do, through failpoint.Hit) and
// prints "ran".
package main

import (
	"fmt"

	// The library packages that hit failpoints; their initialisation must
	// not read the environment.
	_ "github.com/herald-outbox/herald/inbox"
	_ "github.com/herald-outbox/herald/relay"

	"github.com/herald-outbox/herald/internal/failpoint"
)

func main() {
	for _, name := range failpoint.Known {
		failpoint.Hit(name)
	}
	fmt.Println("ran")
}
