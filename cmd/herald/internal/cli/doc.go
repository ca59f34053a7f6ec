// Package cli is the herald binary's command line: one cobra command per
// `herald` subcommand, over herald's public packages. cmd/herald is a thin
// main around Main, so tests run a command in-process.
//
// Start at newRootCommand (cli.go), which assembles the tree. A command
// with a body of its own is an options type in the file of its name
// (relayOptions in relay.go, replayOptions in replay.go, ...): register
// binds its flags to the type's fields, validate checks them before
// anything connects and returns a usage error (exit 2) naming each bad
// flag, and run(ctx) wires the library and does the work. The flags several
// commands share are small types of their own: dbFlags and kafkaFlags
// (connect.go, database.go), routeFlags (routes.go), mappingFlags and
// recordFlags (records.go).
//
// Every flag has an environment variable, named by one rule and bound once
// for the whole tree (flags.go); a value from a variable is reported under
// the variable's name.
package cli
