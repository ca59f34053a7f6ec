// Package failpoint makes a process fail at a named point, for crash drills
// and crash tests. Library code only calls Hit (or Err, at a point that can
// fail), which does nothing unless the
// process's main switched failpoints on: herald's own binaries call
// EnableFromEnv at start (and exit 2 when HERALD_FAILPOINTS is malformed), so
// a service that imports herald is never killed, slowed or refused start-up
// by the variable. When none is set, Hit costs one atomic load.
//
//	HERALD_FAILPOINTS='relay.after_ack_before_mark=crash@3;relay.before_publish=sleep(5s)'
//
// Actions:
//
//	crash      kill the process with SIGKILL at the first hit: no deferred
//	           function, no flush, no graceful shutdown
//	crash@N    the same at the N-th hit (N >= 1)
//	sleep(D)   sleep for the Go duration D at every hit
//	fail@N     the N-th hit of a point checked with Err returns an error, as
//	           if the step it stands before had failed
//
// Start at Hit and Err (what the library calls) and EnableFromEnv (what a
// binary's main calls); Known lists the points, and EventsAtCrash reads the
// events a crash's log line lists, for the drills.
package failpoint
