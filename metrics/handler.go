package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry is the Prometheus registry herald's collectors register on and
// Handler serves. It is an alias, so a package that embeds herald's metrics
// (relay.ServiceConfig) names it without importing the Prometheus client.
type Registry = prometheus.Registry

// NewRegistry returns a registry with the Go runtime and process
// collectors.
func NewRegistry() *Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Handler serves reg's metrics in the Prometheus text format.
func Handler(reg *Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}
