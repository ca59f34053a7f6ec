// Package drill proves herald's guarantees by breaking a real pipeline:
// `herald drill` and `herald demo` run it. A drill starts the whole system
// as supervised processes on fresh databases and a fresh topic (the orders
// API, two relays, the inventory consumer, the warehouse), sends a load of
// orders, injects exactly one fault (a process SIGKILLed at a failpoint, a
// broker or the database restarted, relays started late, the replication
// slot dropped), waits for the pipeline to drain and verifies from the
// databases and the topic, read by kcat, that nothing was lost, invented,
// reordered or applied twice. The specification's three crash windows
// (SPEC section 9) are drills of their own.
//
// Start at Catalog (drill.go): each Drill says what it does (Fault), what
// passing shows (Proves) and, for a failpoint drill, the failpoint of
// package internal/failpoint it crashes at and the evidence function
// (evidence.go) that proves the crash happened in the window the drill is
// about. Run (run.go) runs drills one after the other: a pipeline
// (pipeline.go) under a Supervisor (supervisor.go), the Load generator
// (load.go), the fault (fault.go), recovery measured (recovery.go),
// Verify (verify.go); the Report (report.go) is what --report writes.
// RunDemo (demo.go) is the same pipeline with a steady load and no fault.
package drill
