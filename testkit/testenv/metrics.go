package testenv

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// MetricsAddr returns the address a `herald relay` process serves /metrics
// on, from its "relay listening" log line; "" before it logged it.
func (p *Process) MetricsAddr() string {
	for _, line := range strings.Split(p.Log(), "\n") {
		var entry struct {
			Msg  string `json:"msg"`
			Addr string `json:"metrics_addr"`
		}
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "relay listening" {
			return entry.Addr
		}
	}
	return ""
}

// Metric scrapes the process's /metrics and returns the sum of every series
// of the metric name (a histogram's _count or _sum included by their
// names), or an error when it cannot.
func (p *Process) Metric(name string) (float64, error) {
	addr := p.MetricsAddr()
	if addr == "" {
		return 0, fmt.Errorf("%s has not logged its metrics address yet", p.Name)
	}
	client := http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		series, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if metric, _, _ := strings.Cut(series, "{"); metric != name {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q: %w", name, line, err)
		}
		sum += v
	}
	return sum, sc.Err()
}

// WaitForMetric waits until the process's metric name satisfies cond.
func (p *Process) WaitForMetric(t testing.TB, name string, timeout time.Duration, what string, cond func(float64) bool) float64 {
	t.Helper()
	var last float64
	WaitFor(t, timeout, p.Name+": "+what, func() (bool, string) {
		v, err := p.Metric(name)
		if err != nil {
			return false, err.Error()
		}
		last = v
		return cond(v), fmt.Sprintf("%s = %v", name, v)
	})
	return last
}
