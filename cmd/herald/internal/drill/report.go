package drill

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/herald-outbox/herald/database"
)

// Verdicts of a drill and of a run.
const (
	VerdictPass    = "pass"
	VerdictFail    = "fail"    // something was lost, invented, reordered or doubled
	VerdictError   = "error"   // the drill could not complete
	VerdictSkipped = "skipped" // not runnable here (e.g. no restart command)
)

// Report is what `herald drill --report` writes.
type Report struct {
	Command         string        `json:"command"`
	StartedAt       time.Time     `json:"started_at"`
	FinishedAt      time.Time     `json:"finished_at"`
	DurationSeconds float64       `json:"duration_seconds"`
	Brokers         int           `json:"kafka_brokers"`
	Settings        Settings      `json:"settings"`
	RunDir          string        `json:"run_dir"`
	Verdict         string        `json:"verdict"`
	Drills          []DrillReport `json:"drills"`
}

// Settings are the run's parameters.
type Settings struct {
	Database       string  `json:"database"`
	Source         string  `json:"relay_source"`
	Events         int     `json:"events"`
	Rate           float64 `json:"rate"`
	Concurrency    int     `json:"concurrency"`
	Lease          string  `json:"relay_lease"`
	SessionTimeout string  `json:"consumer_session_timeout"`
	Outage         string  `json:"outage"`
	RestartDelay   string  `json:"restart_delay"`
}

// DrillReport is one drill's outcome.
type DrillReport struct {
	Name    string `json:"name"`
	Window  int    `json:"crash_window,omitempty"`
	Fault   string `json:"fault"`
	Proves  string `json:"proves"`
	Verdict string `json:"verdict"`
	// Failures say why the verdict is not pass.
	Failures []string `json:"failures,omitempty"`
	// Notes are worth a look but fail nothing (a slow graceful stop).
	Notes []string `json:"notes,omitempty"`

	StartedAt       time.Time `json:"started_at"`
	DurationSeconds float64   `json:"duration_seconds"`
	Brokers         int       `json:"kafka_brokers,omitempty"`

	Orders OrdersSummary `json:"orders"`
	Load   LoadResult    `json:"load"`
	// Events is the committed outbox events; TopicRecords the records on
	// the topic.
	Events       int `json:"events"`
	TopicRecords int `json:"topic_records"`
	// Lost, Ghosts, OrderViolations and DoubleEffects must be 0.
	Lost            int `json:"lost"`
	Ghosts          int `json:"ghosts"`
	OrderViolations int `json:"order_violations"`
	DoubleEffects   int `json:"double_effects"`
	// DeadLettered counts records the consumer gave up on (its dead-letter
	// topic); must be 0.
	DeadLettered int64 `json:"dead_lettered"`
	// DuplicatesOnTopic counts records beyond an event's first (over
	// DuplicatedEvents events); DuplicatesAbsorbed the records the inbox
	// dropped as already applied — a lower bound, summed over the last
	// /stats reading of each consumer process; WarehouseReplays the calls
	// the warehouse answered from its idempotency store.
	DuplicatesOnTopic  int   `json:"duplicates_on_topic"`
	DuplicatedEvents   int   `json:"duplicated_events"`
	DuplicatesAbsorbed int64 `json:"duplicates_absorbed_at_least"`
	WarehouseReplays   int64 `json:"warehouse_replays"`
	// Reservations and Releases count orders reserved and released;
	// WarehouseEffects the warehouse's applied operations.
	Reservations     int `json:"reservations"`
	Releases         int `json:"releases"`
	WarehouseEffects int `json:"warehouse_effects"`

	Injection FaultReport `json:"injection"`
	// RecoverySeconds runs from the end of the fault (the restarted process
	// ready, the broker or database back, the relays started) until every
	// event committed by then is published, consumed with its offset
	// committed, and its warehouse call made: the backlog and lag the
	// fault left are 0.
	RecoverySeconds *float64 `json:"recovery_seconds,omitempty"`
	// DrainSeconds runs from the end of the load (or of the fault, if
	// later) until nothing is left: backlog 0, lag 0, no pending call.
	DrainSeconds *float64 `json:"drain_seconds,omitempty"`

	Problems  []string        `json:"problems,omitempty"`
	Exits     []Exit          `json:"exits,omitempty"`
	Timeline  []TimelineEntry `json:"timeline"`
	LogDir    string          `json:"log_dir"`
	Topic     string          `json:"topic"`
	Databases []string        `json:"databases"`
	// Kept says whether the databases and topic were left for inspection.
	Kept bool `json:"kept"`

	errored bool
}

// OrdersSummary is what the clients saw next to what the database holds.
type OrdersSummary struct {
	Attempted          int `json:"attempted"`
	Answered201        int `json:"answered_created"`
	AnsweredRolledBack int `json:"answered_rolled_back"`
	CreateFailed       int `json:"create_failed"`
	// Committed is the orders the database holds; Cancelled of them.
	Committed int `json:"committed"`
	Cancelled int `json:"cancelled"`
	// CommittedUnanswered are committed orders the client never got a
	// 201 for (a crash or outage between commit and answer).
	CommittedUnanswered int `json:"committed_unanswered"`
}

// FaultReport says what was done and when.
type FaultReport struct {
	Injected bool   `json:"injected"`
	Detail   string `json:"detail"`
	// Target is what the fault hit: a service, a broker, the database.
	Target    string    `json:"target,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	Notes     []string  `json:"notes,omitempty"`
}

func (d DrillReport) oneLine() string {
	if d.Verdict == VerdictSkipped {
		return strings.Join(d.Failures, "; ")
	}
	return fmt.Sprintf("%d orders, %d events, %d lost, %d ghosts, %d order violations, duplicates %d on topic / %d absorbed, %d double effects, recovery %s",
		d.Orders.Committed, d.Events, d.Lost, d.Ghosts, d.OrderViolations, d.DuplicatesOnTopic, d.DuplicatesAbsorbed, d.DoubleEffects, secondsText(d.RecoverySeconds))
}

func secondsText(s *float64) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f s", *s)
}

// Markdown is the short summary: one row per drill.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# herald fault drills\n\n")
	fmt.Fprintf(&b, "    %s\n\n", r.Command)
	layout := fmt.Sprintf("%d Kafka broker(s)", r.Brokers)
	fmt.Fprintf(&b, "%s, %s, %s; relays --source %s; %d orders per drill at %.0f/s from %d clients; relay lease %s, consumer session timeout %s, outages %s. "+
		"Took %s. Verdict: **%s**.\n\n",
		r.StartedAt.Format("2006-01-02 15:04 MST"), r.Settings.Database, layout, r.Settings.Source, r.Settings.Events, r.Settings.Rate, r.Settings.Concurrency,
		r.Settings.Lease, r.Settings.SessionTimeout, r.Settings.Outage,
		time.Duration(r.DurationSeconds*float64(time.Second)).Round(time.Second), strings.ToUpper(r.Verdict))
	b.WriteString("| drill | fault | events | lost | duplicates on topic / absorbed (≥) | double effects | recovery | verdict |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, d := range r.Drills {
		fault := d.Fault
		if d.Window > 0 {
			fault = fmt.Sprintf("window %d: %s", d.Window, fault)
		}
		if d.Name == "kafka-broker-restart" && d.Injection.Target != "" {
			fault += fmt.Sprintf(" [%s of %d]", d.Injection.Target, d.Brokers)
		}
		if d.Verdict == VerdictSkipped {
			fmt.Fprintf(&b, "| %s | %s | | | | | | %s |\n", d.Name, fault, strings.Join(d.Failures, "; "))
			continue
		}
		lost := fmt.Sprint(d.Lost)
		if d.Ghosts > 0 || d.OrderViolations > 0 {
			lost += fmt.Sprintf(" (+%d ghosts, %d out of order)", d.Ghosts, d.OrderViolations)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %d / %d | %d | %s | %s |\n", d.Name, fault, d.Events, lost,
			d.DuplicatesOnTopic, d.DuplicatesAbsorbed, d.DoubleEffects, secondsText(d.RecoverySeconds), strings.ToUpper(d.Verdict))
	}
	b.WriteString("\n")
	b.WriteString("Events: committed outbox events (orders created and cancelled). Lost: committed events missing from the topic " +
		"(read by kcat) or from the consumer's inbox. Absorbed: records the inbox dropped as already applied, summed over " +
		"the last /stats reading of each consumer process (a lower bound). Double effects: orders reserved or released " +
		"twice, or with more than one warehouse effect per action. Recovery: from the end of the fault (restarted process " +
		"ready, broker or database back, relays started) until every event committed by then is published, consumed with " +
		"its offset committed, and its warehouse call made.\n")
	b.WriteString("\n## What each fault left behind\n\n")
	for _, d := range r.Drills {
		if d.Verdict == VerdictSkipped || len(d.Injection.Notes) == 0 {
			continue
		}
		fmt.Fprintf(&b, "- **%s**: %s.\n", d.Name, strings.Join(d.Injection.Notes, "; "))
	}
	for _, d := range r.Drills {
		if d.Verdict == VerdictPass || d.Verdict == VerdictSkipped {
			continue
		}
		fmt.Fprintf(&b, "\n## %s: %s\n\n", d.Name, strings.ToUpper(d.Verdict))
		for _, f := range d.Failures {
			fmt.Fprintf(&b, "    %s\n", f)
		}
		fmt.Fprintf(&b, "\nLogs: %s\n", d.LogDir)
	}
	return b.String()
}

// Write writes the JSON report to path and the Markdown summary next to
// it (path with .md instead of .json).
func (r *Report) Write(path string) (mdPath string, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	mdPath = strings.TrimSuffix(path, filepath.Ext(path)) + ".md"
	return mdPath, os.WriteFile(mdPath, []byte(r.Markdown()), 0o644)
}

// databaseName names the kind of server url reaches, for the report.
func databaseName(url string) string {
	if database.IsPostgres(url) {
		return "PostgreSQL"
	}
	return "MariaDB/MySQL"
}
