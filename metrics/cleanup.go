package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-outbox/herald/store"
)

// Cleanup implements relay.CleanupObserver with Prometheus collectors: a
// relay registers them only when it runs a cleaner, so a relay without
// one exports none and the cleanup alert stays silent for it.
type Cleanup struct {
	passes      *prometheus.CounterVec
	deleted     *prometheus.CounterVec
	lastSuccess prometheus.Gauge
}

// NewCleanup registers the cleaner's collectors on reg.
func NewCleanup(reg prometheus.Registerer) *Cleanup {
	f := factory{reg}
	c := &Cleanup{
		passes: f.counterVec("herald_cleanup_passes_total",
			"Cleanup passes, by result: success or failure.", "result"),
		deleted: f.counterVec("herald_cleanup_deleted_rows_total",
			"Rows the cleaner deleted, by table: outbox_events, failures (the failure log), consumed_events (the inbox).", "table"),
		lastSuccess: f.gauge("herald_cleanup_last_success_timestamp_seconds",
			"When the last cleanup pass succeeded (0 before one did)."),
	}
	for _, result := range []string{"success", "failure"} {
		c.passes.WithLabelValues(result)
	}
	for _, table := range []string{"outbox_events", "failures", "consumed_events"} {
		c.deleted.WithLabelValues(table)
	}
	return c
}

// CleanedUp implements relay.CleanupObserver: one pass, its report (what
// it deleted before a failure, too) and its error.
func (c *Cleanup) CleanedUp(rep store.CleanupReport, err error) {
	c.deleted.WithLabelValues("outbox_events").Add(float64(rep.Events))
	c.deleted.WithLabelValues("failures").Add(float64(rep.Failures))
	c.deleted.WithLabelValues("consumed_events").Add(float64(rep.Inbox))
	if err != nil {
		c.passes.WithLabelValues("failure").Inc()
		return
	}
	c.passes.WithLabelValues("success").Inc()
	c.lastSuccess.Set(float64(time.Now().Unix()))
}
