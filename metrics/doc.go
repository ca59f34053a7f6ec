// Package metrics holds herald's Prometheus collectors; it is the only
// package that imports the Prometheus client. docs/metrics.md lists every
// series with its labels and what moves it.
//
//	reg := prometheus.NewRegistry()
//	relayMetrics := metrics.NewRelay(reg)          // a relay.Observer
//	backlog := metrics.NewBacklog(reg, store, 0, nil)
//	go backlog.Run(ctx)
//	http.Handle("/metrics", metrics.Handler(reg))
package metrics
