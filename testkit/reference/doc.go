// Package reference is the relay loop of the specification's source
// material, the baseline herald's benchmarks (relay's BenchmarkRelay and
// the bench module's peers) measure herald against: claim 100 ready events
// by occurred_at with SELECT ... FOR UPDATE SKIP LOCKED at the server's
// default isolation, record the lease, commit; then per event a synchronous
// produce and its own UPDATE of published_at. It is not a relay to run: it
// does not exclude events another relay leased and committed, keeps no
// order across relays, and a crash between a produce and its mark
// publishes the event again.
//
// Start at Round: one claim and its publication; ClaimQuery is the
// source material's statement.
package reference
