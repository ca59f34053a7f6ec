package drill

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	driver "github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/testkit/verify"
)

// pipeline is one run of the whole system as real processes: fresh
// databases and topic, the warehouse, the inventory consumer, the orders
// API and two relays under a Supervisor.
type pipeline struct {
	cfg  Config
	name string // drill name, or "demo"
	dir  string // logs

	dbNames                  [3]string // orders, inventory, warehouse
	dsns                     [3]string
	topic, group             string
	topicBase                string // topic is topicBase + a timestamp
	brokers                  int    // brokers in the cluster
	replication              int16
	server                   *sql.DB // the URL's own database, for CREATE/DROP
	dialect                  store.Dialect
	ordersDB, invDB, wareDB  *sql.DB
	kcl                      *kgo.Client
	adm                      *kadm.Client
	sup                      *Supervisor
	orders, inventory, wareh *Proc
	relays                   []*Proc
	ordersAddr, invAddr      string
	wareAddr                 string
	relayAddrs               []string
	started                  time.Time
	quiet                    bool // demo: no timeline lines on Out
	scrapeMu                 sync.Mutex
	scraped                  map[int]invStats // inventory incarnation -> last /stats
	timelineMu               sync.Mutex
	timeline                 []TimelineEntry
	stopScrape               context.CancelFunc
	scrapeDone               chan struct{}
}

// TimelineEntry is one thing that happened during a drill.
type TimelineEntry struct {
	At time.Time `json:"at"`
	// Offset is seconds since the drill started.
	Offset float64 `json:"offset_seconds"`
	What   string  `json:"what"`
}

// invStats is the part of the inventory's /stats a drill reads.
type invStats struct {
	Processed  int64 `json:"processed"`
	Duplicates int64 `json:"duplicates"`
}

// note records a timeline entry and prints it.
func (p *pipeline) note(format string, args ...any) {
	now := time.Now()
	e := TimelineEntry{At: now.UTC(), Offset: now.Sub(p.started).Seconds(), What: fmt.Sprintf(format, args...)}
	p.timelineMu.Lock()
	p.timeline = append(p.timeline, e)
	p.timelineMu.Unlock()
	if !p.quiet {
		fmt.Fprintf(p.cfg.Out, "  %6.1fs  %s\n", e.Offset, e.What)
	}
}

func (p *pipeline) timelineCopy() []TimelineEntry {
	p.timelineMu.Lock()
	defer p.timelineMu.Unlock()
	return append([]TimelineEntry(nil), p.timeline...)
}

// newPipeline names the run's databases and topic; setup creates them.
func newPipeline(cfg Config, name, dir string) *pipeline {
	base := cfg.DBPrefix + strings.ReplaceAll(name, "-", "_")
	if name == "" {
		base = strings.TrimSuffix(cfg.DBPrefix, "_")
	}
	p := &pipeline{
		cfg: cfg, name: name, dir: dir, started: time.Now(), scraped: map[int]invStats{},
		dbNames:   [3]string{base + "_orders", base + "_inventory", base + "_warehouse"},
		topicBase: strings.ReplaceAll(base, "_", "-") + "-",
	}
	p.topic = p.topicBase + fmt.Sprint(p.started.Unix())
	p.group = p.topic + "-inventory"
	return p
}

// setup connects, creates fresh databases and the topic.
func (p *pipeline) setup(ctx context.Context) error {
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return err
	}
	var err error
	if p.server, p.dialect, err = database.Open(ctx, p.cfg.DatabaseURL, p.cfg.DatabaseOptions); err != nil {
		return fmt.Errorf("database server: %w", err)
	}
	for i, name := range p.dbNames {
		if err := database.DropDatabase(ctx, p.server, p.dialect, name); err != nil {
			return fmt.Errorf("drop database %s: %w", name, err)
		}
		create := "CREATE DATABASE `" + name + "` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
		if database.OnPostgres(p.dialect) {
			create = `CREATE DATABASE "` + name + `"`
		}
		if _, err := p.server.ExecContext(ctx, create); err != nil {
			return fmt.Errorf("create database %s: %w", name, err)
		}
		if p.dsns[i], err = databaseDSN(p.cfg.DatabaseURL, name); err != nil {
			return err
		}
	}
	dbs := []**sql.DB{&p.ordersDB, &p.invDB, &p.wareDB}
	for i, dsn := range p.dsns {
		if *dbs[i], _, err = database.Open(ctx, dsn, p.cfg.DatabaseOptions); err != nil {
			return fmt.Errorf("open database %s: %w", p.dbNames[i], err)
		}
	}

	kafkaOpts, err := p.cfg.Kafka.Options()
	if err != nil {
		return err
	}
	if p.kcl, err = kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(p.cfg.Brokers...)}, kafkaOpts...)...); err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	p.adm = kadm.NewClient(p.kcl)
	mdCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	md, err := p.adm.BrokerMetadata(mdCtx)
	if err != nil {
		return fmt.Errorf("kafka at %v does not answer: %w", p.cfg.Brokers, err)
	}
	p.brokers = len(md.Brokers)
	p.replication = int16(min(3, p.brokers))
	minISR := min(2, int(p.replication))
	if _, err := kafka.EnsureTopic(mdCtx, p.adm, kafka.TopicSpec{
		Name: p.topic, Partitions: kafka.TopicPartitionsDefault, ReplicationFactor: p.replication, MinInsyncReplicas: minISR,
	}, false); err != nil {
		return err
	}
	p.note("databases %s, topic %s (%d partitions, replication factor %d, min.insync.replicas %d, %d broker(s))",
		strings.Join(p.dbNames[:], ", "), p.topic, kafka.TopicPartitionsDefault, p.replication, minISR, p.brokers)
	return nil
}

// sql returns a statement written with ? placeholders in the database's
// form.
func (p *pipeline) sql(query string) string { return database.Rebind(p.dialect, query) }

// databaseDSN is serverDSN pointed at database name.
func databaseDSN(serverDSN, name string) (string, error) {
	if database.IsPostgres(serverDSN) {
		u, err := url.Parse(serverDSN)
		if err != nil {
			return "", fmt.Errorf("database url: %w", err)
		}
		u.Path = "/" + name
		return u.String(), nil
	}
	norm, err := mysql.NormalizeDSN(serverDSN)
	if err != nil {
		return "", fmt.Errorf("database url: %w", err)
	}
	c, err := driver.ParseDSN(norm)
	if err != nil {
		return "", fmt.Errorf("database url: %w", err)
	}
	c.DBName = name
	return mysql.NormalizeDSN(c.FormatDSN())
}

// freeAddrs returns n distinct loopback addresses nobody listens on. The
// services keep them across restarts (as a deployment would), so they come
// from below the kernel's ephemeral range: an outgoing connection cannot
// take one while its process restarts — and from 20000 up, above the
// stack's own ports (MariaDB 3306, Kafka 9092-9094 and 19090-19092), which
// are free while a drill has that server stopped. Every listener is held
// until all n are chosen, so no port is handed out twice.
func freeAddrs(n int) ([]string, error) {
	const portsFrom = 20000
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var lo, hi int
		if _, err := fmt.Sscan(string(b), &lo, &hi); err == nil && lo > portsFrom+1000 {
			low = lo
		}
	}
	var held []net.Listener
	defer func() {
		for _, ln := range held {
			ln.Close()
		}
	}()
	var out []string
	for tries := 0; len(out) < n && tries < 1000; tries++ {
		port := portsFrom + mrand.IntN(low-portsFrom)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		held = append(held, ln)
		out = append(out, ln.Addr().String())
	}
	if len(out) < n {
		return nil, fmt.Errorf("no %d free ports on 127.0.0.1 below %d", n, low)
	}
	return out, nil
}

// baseEnv is the drill's environment without HERALD_* variables: each
// service gets exactly the ones it is given.
func baseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HERALD_") {
			out = append(out, kv)
		}
	}
	return out
}

// connEnv is baseEnv plus the connection settings every service gets: the
// database options, and Kafka's security (the services that do not talk to
// Kafka ignore it).
func (p *pipeline) connEnv() []string {
	env := append(baseEnv(), database.ConnOptionsEnv(p.cfg.DatabaseOptions)...)
	return append(env, kafka.SecurityEnv(p.cfg.Kafka)...)
}

// startServices starts the warehouse, the inventory consumer and the orders
// API (in that order, each ready before the next), then the relays unless
// relaysLate. failpoints maps a service name to its first incarnation's
// HERALD_FAILPOINTS.
func (p *pipeline) startServices(ctx context.Context, relaysLate bool, failpoints map[string]string) error {
	p.sup = NewSupervisor(p.dir, p.cfg.RestartDelay, p.note)
	addrs, err := freeAddrs(5)
	if err != nil {
		return err
	}
	p.wareAddr, p.invAddr, p.ordersAddr, p.relayAddrs = addrs[0], addrs[1], addrs[2], addrs[3:5]
	brokers := strings.Join(p.cfg.Brokers, ",")
	bin := func(name string) string { return filepath.Join(p.cfg.BinDir, name) }
	env := func(kv ...string) []string { return append(p.connEnv(), kv...) }
	readyCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	if p.wareh, err = p.sup.Start(Service{
		Name: "warehouse", Path: bin("warehouse"), Failpoints: failpoints["warehouse"],
		Env:    env("HERALD_WAREHOUSE_ADDR="+p.wareAddr, "HERALD_WAREHOUSE_MYSQL_DSN="+p.dsns[2], "HERALD_DATABASE_URL="+p.dsns[2]),
		Health: "http://" + p.wareAddr + "/healthz",
	}); err != nil {
		return err
	}
	if err := p.wareh.WaitReady(readyCtx, 1); err != nil {
		return err
	}
	if p.inventory, err = p.sup.Start(Service{
		Name: "inventory", Path: bin("inventory"), Failpoints: failpoints["inventory"],
		Env: env("HERALD_DATABASE_URL="+p.dsns[1], "HERALD_KAFKA_BROKERS="+brokers,
			"HERALD_INVENTORY_TOPICS="+p.topic, "HERALD_INVENTORY_CONSUMER="+ConsumerName,
			"HERALD_INVENTORY_GROUP="+p.group, "HERALD_WAREHOUSE_URL=http://"+p.wareAddr,
			"HERALD_INVENTORY_ADDR="+p.invAddr, fmt.Sprintf("HERALD_INVENTORY_DEFAULT_STOCK=%d", InitialStock),
			"HERALD_INVENTORY_SESSION_TIMEOUT="+p.cfg.SessionTimeout.String()),
		Health: "http://" + p.invAddr + "/healthz",
	}); err != nil {
		return err
	}
	if p.orders, err = p.sup.Start(Service{
		Name: "orders", Path: bin("orders"), Failpoints: failpoints["orders"],
		Env:    env("HERALD_ORDERS_ADDR="+p.ordersAddr, "HERALD_DATABASE_URL="+p.dsns[0], "HERALD_ORDERS_TEST_ROLLBACKS=1"),
		Health: "http://" + p.ordersAddr + "/healthz",
	}); err != nil {
		return err
	}
	for _, proc := range []*Proc{p.inventory, p.orders} {
		if err := proc.WaitReady(readyCtx, 1); err != nil {
			return err
		}
	}
	if !relaysLate {
		return p.startRelays(ctx, failpoints)
	}
	return nil
}

// startRelays starts the two relays (the orders API has migrated the
// outbox by now) and waits until they serve /healthz. With a stream
// source, relay-2 starts only once relay-1 leads the stream, so the
// stream-crash-* drills' failpoints (on relay-1) are on the leader.
func (p *pipeline) startRelays(ctx context.Context, failpoints map[string]string) error {
	readyCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for i := range p.relayAddrs {
		name := fmt.Sprintf("relay-%d", i+1)
		proc, err := p.sup.Start(Service{
			Name: name, Path: filepath.Join(p.cfg.BinDir, "herald"), Failpoints: failpoints[name],
			ArgsFor: func(n int) []string { return []string{"relay", "--relay-id", RelayID(name, n)} },
			Env: append(p.connEnv(), "HERALD_DATABASE_URL="+p.dsns[0], "HERALD_KAFKA_BROKERS="+strings.Join(p.cfg.Brokers, ","),
				"HERALD_TOPICS=order="+p.topic, "HERALD_METRICS_ADDR="+p.relayAddrs[i], "HERALD_LEASE="+p.cfg.Lease.String(),
				"HERALD_SOURCE="+p.cfg.Source),
			Health: "http://" + p.relayAddrs[i] + "/healthz",
		})
		if err != nil {
			return err
		}
		p.relays = append(p.relays, proc)
		if err := proc.WaitReady(readyCtx, 1); err != nil {
			return err
		}
		if i == 0 && p.cfg.Source != SourcePoll {
			if err := p.waitStreamLeader(readyCtx, RelayID(name, 1)); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitStreamLeader waits until relayID holds the stream's lease.
func (p *pipeline) waitStreamLeader(ctx context.Context, relayID string) error {
	for {
		var leader sql.NullString
		err := p.ordersDB.QueryRowContext(ctx, "SELECT leader FROM outbox_stream WHERE id = 1").Scan(&leader)
		if err == nil && leader.String == relayID {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s never led the stream (leader %q, last error %v)", relayID, leader.String, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// RelayID is the --relay-id of incarnation n of a relay service.
func RelayID(service string, n int) string { return fmt.Sprintf("drill-%s.%d", service, n) }

// procByName returns the supervised process called name.
func (p *pipeline) procByName(name string) *Proc {
	for _, proc := range append([]*Proc{p.orders, p.inventory, p.wareh}, p.relays...) {
		if proc != nil && proc.Name() == name {
			return proc
		}
	}
	return nil
}

// startScraper reads the inventory's /stats every 500 ms and keeps the last
// reading of each incarnation, so a killed instance's count survives it.
func (p *pipeline) startScraper() {
	ctx, cancel := context.WithCancel(context.Background())
	p.stopScrape, p.scrapeDone = cancel, make(chan struct{})
	go func() {
		defer close(p.scrapeDone)
		for {
			p.scrapeOnce()
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
}

var scrapeClient = &http.Client{Timeout: 2 * time.Second}

func (p *pipeline) scrapeOnce() {
	if p.inventory == nil {
		return
	}
	n := p.inventory.Incarnation()
	var st invStats
	if err := getJSON(scrapeClient, "http://"+p.invAddr+"/stats", &st); err != nil {
		return
	}
	if p.inventory.Incarnation() != n {
		return // the answer may come from either incarnation
	}
	p.scrapeMu.Lock()
	p.scraped[n] = st
	p.scrapeMu.Unlock()
}

// absorbed is the duplicates the inbox dropped, summed over the last
// reading of every inventory incarnation: a lower bound, since an
// incarnation may have dropped more after its last reading.
func (p *pipeline) absorbed() (dups, processed int64) {
	p.scrapeMu.Lock()
	defer p.scrapeMu.Unlock()
	for _, st := range p.scraped {
		dups += st.Duplicates
		processed += st.Processed
	}
	return dups, processed
}

func getJSON(c *http.Client, url string, v any) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}

// shutdown stops the scraper (after a last reading) and every process,
// gracefully; it returns the processes that had to be killed.
func (p *pipeline) shutdown() error {
	if p.stopScrape != nil {
		p.scrapeOnce()
		p.stopScrape()
		<-p.scrapeDone
		p.stopScrape = nil
	}
	if p.sup == nil {
		return nil
	}
	return p.sup.StopAll(30 * time.Second)
}

// close releases connections; with drop it also drops the databases and
// deletes the topic.
func (p *pipeline) close(drop bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, db := range []*sql.DB{p.ordersDB, p.invDB, p.wareDB} {
		if db != nil {
			db.Close()
		}
	}
	if drop && p.server != nil {
		for _, name := range p.dbNames {
			if err := database.DropDatabase(ctx, p.server, p.dialect, name); err != nil {
				p.note("drop database %s: %v", name, err)
			}
		}
	}
	if drop && p.adm != nil {
		for _, t := range []string{p.topic, p.dlqTopic()} {
			if _, err := p.adm.DeleteTopic(ctx, t); err != nil {
				p.note("delete topic %s: %v", t, err)
			}
		}
		if _, err := p.adm.DeleteGroup(ctx, p.group); err != nil {
			p.note("delete group %s: %v", p.group, err)
		}
	}
	if p.server != nil {
		p.server.Close()
	}
	if p.kcl != nil {
		p.kcl.Close()
	}
}

// dlqTopic is where the inventory consumer dead-letters records it gives
// up on (it creates the topic at start).
func (p *pipeline) dlqTopic() string { return kafka.DLQTopicName(p.topic, ConsumerName) }

// deadLettered counts the records of the dead-letter topic.
func (p *pipeline) deadLettered(ctx context.Context) (int64, error) {
	offs, err := kafka.EndOffsets(ctx, p.adm, p.dlqTopic())
	var n int64
	for _, o := range offs {
		n += o.End
	}
	return n, err
}

// pipelineState is the pipeline's progress, read from the databases and
// Kafka.
type pipelineState struct {
	Orders       int64
	Events       int64
	Published    int64
	Unpublished  int64 // not published, not discarded (quarantined included)
	Quarantined  int64
	Consumed     int64
	PendingCalls int64
	Lag          int64 // -1 when Kafka did not answer
	Err          error
}

// drained reports whether nothing is left to do: every event published and
// consumed, no quarantine, no lag, no pending warehouse call.
func (s pipelineState) drained() bool {
	return s.Err == nil && s.Unpublished == 0 && s.Quarantined == 0 && s.Lag == 0 &&
		s.PendingCalls == 0 && s.Consumed == s.Events
}

func (s pipelineState) String() string {
	if s.Err != nil {
		return "unknown: " + s.Err.Error()
	}
	return fmt.Sprintf("%d events, %d unpublished, %d quarantined, %d consumed, lag %d, %d warehouse calls pending",
		s.Events, s.Unpublished, s.Quarantined, s.Consumed, s.Lag, s.PendingCalls)
}

func (p *pipeline) readState(ctx context.Context) pipelineState {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var s pipelineState
	if err := p.ordersDB.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM orders), COUNT(*),
		COALESCE(SUM(CASE WHEN `+verify.PublishedSQL+` THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN NOT `+verify.PublishedSQL+` AND discarded_at IS NULL THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN quarantined_at IS NOT NULL AND discarded_at IS NULL THEN 1 ELSE 0 END), 0)
		FROM outbox_events`).Scan(&s.Orders, &s.Events, &s.Published, &s.Unpublished, &s.Quarantined); err != nil {
		s.Err = fmt.Errorf("orders database: %w", err)
		return s
	}
	if err := p.invDB.QueryRowContext(ctx, p.sql(`SELECT (SELECT COUNT(*) FROM consumed_events WHERE consumer_name = ?),
		(SELECT COUNT(*) FROM warehouse_calls WHERE status = 'pending')`), ConsumerName).Scan(&s.Consumed, &s.PendingCalls); err != nil {
		s.Err = fmt.Errorf("inventory database: %w", err)
		return s
	}
	total, _, err := kafka.GroupLag(ctx, p.adm, p.group, p.topic)
	if err != nil {
		s.Lag = -1
		s.Err = fmt.Errorf("consumer lag: %w", err)
		return s
	}
	s.Lag = total
	return s
}
