// Package services holds the example services as herald's drills run them:
// thin mains (orders, inventory) that arm herald's failpoints from
// HERALD_FAILPOINTS and wire them into the examples' hooks, so a drill
// crashes the example code at a named window while the examples a user
// copies carry no failpoint. It is a module of its own, like bench: the
// application's packages do not import the examples (layout_test.go), and
// herald's internal/failpoint stays importable because the module's path
// lies under herald's.
package services
