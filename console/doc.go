// Package console is herald's web console: the page the person on call
// opens to see what is stuck and fix it, without a shell or database
// credentials. It serves
//
//   - the overview: the same report as `herald status` (package status):
//     backlog by state with the oldest ages, configuration stops, failures,
//     relays and their leases, the stream, partitions and consumer lag,
//     refreshing itself;
//   - the events: search by event id, aggregate, event type, state and
//     time, in keyset pages; an aggregate's timeline in order, with the
//     event that holds the rest;
//   - the quarantine: list, detail, retry and discard of one event, a
//     selection or a filter, each with a reason and a count to confirm,
//     through the same store calls and audit log as `herald quarantine`;
//   - the replays: start (relay.Replayer, herald replay's rules), progress,
//     cancel; and the audit log.
//
// Every state is read through the store (store.Store): nothing here
// decides what state an event is in.
//
// Security: users sign in with basic auth, a bearer token or the login page
// (secrets compared in constant time), as read-only or operator; every
// action needs the operator role and the form's CSRF token, and
// cross-origin posts are refused; the pages run under a strict
// Content-Security-Policy with no inline script, and may not be framed.
// /healthz and /readyz answer without signing in. Assets and templates are
// embedded: the standard library serves everything.
//
// Mount it under a prefix in a server of one's own:
//
//	h, err := console.NewHandler(console.Config{
//		Store:  store.New(db, mysql.Dialect{}),
//		Prefix: "/herald",
//		Users:  users, // console.ParseUsers(file)
//	})
//	if err != nil {
//		return err
//	}
//	defer h.Close()
//	mux.Handle("/herald/", h)
//
// `herald console` serves the same handler (docs/console.md).
package console
