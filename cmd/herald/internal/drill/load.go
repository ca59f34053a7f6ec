package drill

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Load shapes the load generator: orders created through the orders API by
// a few concurrent clients at a steady rate; some are deliberately rolled
// back, some cancelled right after they were created.
type Load struct {
	// BaseURL is the orders API, e.g. http://127.0.0.1:8080.
	BaseURL string
	// Orders is how many creates the API must accept (answer 201 or
	// deliberate_rollback): failed requests do not count, so the load
	// outlasts an outage. At most 3 × Orders requests are sent. 0 sends
	// until ctx ends.
	Orders int
	// Concurrency is the number of clients. Defaults to 4.
	Concurrency int
	// Rate is create requests per second, across clients. Defaults to 25.
	Rate float64
	// RollbackRatio is the share of creates sent with X-Herald-Rollback: 1.
	// Defaults to 0.1.
	RollbackRatio float64
	// CancelRatio is the share of created orders cancelled at once.
	// Defaults to 0.25.
	CancelRatio float64
	// SKUs is how many SKUs orders draw from (SKU-1..SKU-n). Defaults to 20.
	SKUs int
}

func (l Load) withDefaults() Load {
	if l.Concurrency == 0 {
		l.Concurrency = 4
	}
	if l.Rate == 0 {
		l.Rate = 25
	}
	if l.RollbackRatio == 0 {
		l.RollbackRatio = 0.1
	}
	if l.CancelRatio == 0 {
		l.CancelRatio = 0.25
	}
	if l.SKUs == 0 {
		l.SKUs = 20
	}
	return l
}

// LoadResult is what the clients saw. The orders database, not this, says
// what was committed: a request without an answer may have committed.
type LoadResult struct {
	// Attempted counts create requests sent.
	Attempted int `json:"attempted"`
	// Created counts 201 answers.
	Created int `json:"created"`
	// RolledBack counts 500 deliberate_rollback answers.
	RolledBack int `json:"rolled_back"`
	// CreateFailed counts creates with any other answer or none.
	CreateFailed int `json:"create_failed"`
	// Cancelled counts 200 answers to cancels; CancelFailed any other.
	Cancelled    int `json:"cancelled"`
	CancelFailed int `json:"cancel_failed"`
	// Errors counts failures by kind ("503 unavailable", "connection refused").
	Errors map[string]int `json:"errors,omitempty"`

	// CreatedIDs are the order ids answered 201; RolledBackIDs the ids
	// named by deliberate_rollback answers.
	CreatedIDs    []int64 `json:"-"`
	RolledBackIDs []int64 `json:"-"`
}

// Generator runs a Load; its counters can be read while it runs.
type Generator struct {
	load   Load
	client *http.Client

	attempted atomic.Int64
	accepted  atomic.Int64
	created   atomic.Int64

	mu  sync.Mutex
	res LoadResult
}

// NewGenerator returns a generator for l.
func NewGenerator(l Load) *Generator {
	return &Generator{
		load: l.withDefaults(),
		client: &http.Client{
			Timeout:   10 * time.Second,
			Transport: &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second},
		},
		res: LoadResult{Errors: map[string]int{}},
	}
}

// Attempted is how many create requests were sent so far.
func (g *Generator) Attempted() int { return int(g.attempted.Load()) }

// Accepted is how many creates were answered 201 or deliberate_rollback
// so far.
func (g *Generator) Accepted() int { return int(g.accepted.Load()) }

// Created is how many creates were answered 201 so far.
func (g *Generator) Created() int { return int(g.created.Load()) }

// Run sends the load and returns when every request was answered (or
// failed). Once ctx ends no request is started; those in flight finish
// (within the client's 10 s timeout), so none is cut off after its commit.
func (g *Generator) Run(ctx context.Context) LoadResult {
	l := g.load
	tickets := make(chan int)
	go func() {
		defer close(tickets)
		interval := time.Duration(float64(time.Second) / l.Rate)
		next := time.Now()
		for i := 0; l.Orders == 0 || (g.accepted.Load() < int64(l.Orders) && i < 3*l.Orders); i++ {
			if d := time.Until(next); d > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(d):
				}
			}
			next = next.Add(interval)
			select {
			case tickets <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for w := 0; w < l.Concurrency; w++ {
		rng := mrand.New(mrand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
		wg.Go(func() {
			for range tickets {
				g.one(context.WithoutCancel(ctx), rng)
			}
		})
	}
	wg.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.res
	out.Errors = map[string]int{}
	for k, v := range g.res.Errors {
		out.Errors[k] = v
	}
	sort.Slice(out.CreatedIDs, func(i, j int) bool { return out.CreatedIDs[i] < out.CreatedIDs[j] })
	sort.Slice(out.RolledBackIDs, func(i, j int) bool { return out.RolledBackIDs[i] < out.RolledBackIDs[j] })
	return out
}

type orderItem struct {
	SKU       string `json:"sku"`
	Quantity  int    `json:"quantity"`
	UnitPrice string `json:"unit_price"`
}

type createOrder struct {
	CustomerID int64       `json:"customer_id"`
	Items      []orderItem `json:"items"`
}

// one creates an order (maybe rolled back on purpose) and maybe cancels it.
func (g *Generator) one(ctx context.Context, rng *mrand.Rand) {
	l := g.load
	req := createOrder{CustomerID: 1 + rng.Int64N(1000)}
	skus := rng.Perm(l.SKUs)[:1+rng.IntN(min(3, l.SKUs))]
	for _, s := range skus {
		req.Items = append(req.Items, orderItem{
			SKU: fmt.Sprintf("SKU-%d", s+1), Quantity: 1 + rng.IntN(5),
			UnitPrice: fmt.Sprintf("%d.%02d", 1+rng.IntN(99), rng.IntN(100)),
		})
	}
	body, _ := json.Marshal(req)
	rollback := rng.Float64() < l.RollbackRatio
	headers := map[string]string{"Content-Type": "application/json", "Idempotency-Key": newKey()}
	if rollback {
		headers["X-Herald-Rollback"] = "1"
	}
	g.attempted.Add(1)
	status, answer, err := g.post(ctx, "/orders", body, headers)
	var parsed struct {
		OrderID int64 `json:"order_id"`
		Error   struct {
			Code    string `json:"code"`
			OrderID int64  `json:"order_id"`
		} `json:"error"`
	}
	if err == nil {
		json.Unmarshal(answer, &parsed)
	}
	g.mu.Lock()
	g.res.Attempted++
	switch {
	case err != nil:
		g.res.CreateFailed++
		g.res.Errors["create: "+errorKind(err)]++
	case status == http.StatusCreated && parsed.OrderID > 0:
		g.accepted.Add(1)
		g.res.Created++
		g.res.CreatedIDs = append(g.res.CreatedIDs, parsed.OrderID)
	case status == http.StatusInternalServerError && parsed.Error.Code == "deliberate_rollback" && parsed.Error.OrderID > 0:
		g.accepted.Add(1)
		g.res.RolledBack++
		g.res.RolledBackIDs = append(g.res.RolledBackIDs, parsed.Error.OrderID)
	default:
		g.res.CreateFailed++
		g.res.Errors[fmt.Sprintf("create: %d %s", status, parsed.Error.Code)]++
	}
	g.mu.Unlock()
	if err != nil || status != http.StatusCreated || parsed.OrderID <= 0 {
		return
	}
	g.created.Add(1)
	if rng.Float64() >= l.CancelRatio {
		return
	}
	status, answer, err = g.post(ctx, fmt.Sprintf("/orders/%d/cancel", parsed.OrderID), nil, nil)
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case err != nil:
		g.res.CancelFailed++
		g.res.Errors["cancel: "+errorKind(err)]++
	case status == http.StatusOK:
		g.res.Cancelled++
	default:
		json.Unmarshal(answer, &parsed)
		g.res.CancelFailed++
		g.res.Errors[fmt.Sprintf("cancel: %d %s", status, parsed.Error.Code)]++
	}
}

func (g *Generator) post(ctx context.Context, path string, body []byte, headers map[string]string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.load.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}

// errorKind names a transport error briefly, for the report.
func errorKind(err error) string {
	msg := err.Error()
	for _, k := range []string{"connection refused", "connection reset", "EOF", "timeout", "context canceled"} {
		if strings.Contains(msg, k) {
			return k
		}
	}
	if len(msg) > 60 {
		msg = msg[:60]
	}
	return msg
}

func newKey() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
