package server

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/examples/contract"
	"github.com/herald-outbox/herald/migrations"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/mysql"
)

//go:embed sql/*.sql sql/postgres/*.sql
var migrationFiles embed.FS

// Migrations is the warehouse's schema, with its own version table.
var Migrations = migrations.Set{Name: "warehouse", Table: "warehouse_schema_migrations", FS: mustSub(migrationFiles, "sql"),
	PostgresFS: mustSub(migrationFiles, "sql/postgres")}

// Defaults of Config.
const (
	// AddrDefault is Config.Addr's default.
	AddrDefault = "127.0.0.1:8081"
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes = 64 << 10
	// IdempotencyKeyMaxLen bounds the Idempotency-Key header.
	IdempotencyKeyMaxLen = 128
	// HeaderIdempotencyKey carries the caller's idempotency key.
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderReplayed is set on a response that repeats a stored one.
	HeaderReplayed = "Idempotent-Replayed"
	// queryTimeout bounds every statement.
	queryTimeout = 10 * time.Second
)

// Config shapes a Server. DB is required.
type Config struct {
	// Addr is the listen address. Defaults to 127.0.0.1:8081.
	Addr string
	// DB holds the warehouse's tables (see Migrations). Required.
	DB *sql.DB
	// Dialect is DB's: mysql.Dialect{} or postgres.Dialect{}. Defaults to
	// mysql.Dialect{}.
	Dialect store.Dialect
	// Logger receives requests that failed. Defaults to slog.Default().
	Logger *slog.Logger
}

// Server is the warehouse HTTP service.
type Server struct {
	cfg       Config
	log       *slog.Logger
	mux       *http.ServeMux
	conflicts atomic.Int64
}

// New returns a Server; Run serves it, Handler exposes it for tests.
func New(cfg Config) (*Server, error) {
	if cfg.DB == nil {
		return nil, errors.New("warehouse config: DB is required")
	}
	if cfg.Addr == "" {
		cfg.Addr = AddrDefault
	}
	if cfg.Dialect == nil {
		cfg.Dialect = mysql.Dialect{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux()}
	s.mux.HandleFunc("POST /v1/operations", s.postOperation)
	s.mux.HandleFunc("GET /v1/operations/{key}", s.getOperation)
	s.mux.HandleFunc("GET /stats", s.getStats)
	s.mux.HandleFunc("GET /healthz", s.getHealth)
	return s, nil
}

// Handler returns the service's HTTP handler.
func (s *Server) Handler() http.Handler { return s.mux }

// Run listens on Addr and serves until ctx is cancelled, then shuts down
// gracefully (in-flight requests get 10 s) and returns nil.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("warehouse: listen: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Serve is Run on a listener the caller opened.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      15 * time.Second,
		IdleTimeout:       time.Minute,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	s.log.Info("warehouse listening", "addr", ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("warehouse: serve: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("warehouse: shutdown: %w", err)
	}
	s.log.Info("warehouse stopped")
	return nil
}

// Item is one line of an operation.
type Item struct {
	SKU      string `json:"sku"`
	Quantity int64  `json:"quantity"`
}

// Operation is the body of POST /v1/operations.
type Operation struct {
	// Action is "reserve" or "release".
	Action  string `json:"action"`
	OrderID int64  `json:"order_id"`
	Items   []Item `json:"items"`
}

func (o Operation) validate() error {
	switch {
	case o.Action != "reserve" && o.Action != "release":
		return fmt.Errorf("action must be reserve or release, got %.20q", o.Action)
	case o.OrderID <= 0:
		return errors.New("order_id must be positive")
	case len(o.Items) == 0:
		return errors.New("items must not be empty")
	}
	for i, it := range o.Items {
		if err := contract.ValidateSKU(it.SKU); err != nil {
			return fmt.Errorf("items[%d]: %v", i, err)
		}
		if it.Quantity <= 0 {
			return fmt.Errorf("items[%d]: quantity must be positive, got %d", i, it.Quantity)
		}
	}
	return nil
}

// Applied is the response to an applied operation.
type Applied struct {
	ID             int64     `json:"id"`
	IdempotencyKey string    `json:"idempotency_key"`
	Action         string    `json:"action"`
	OrderID        int64     `json:"order_id"`
	Items          []Item    `json:"items"`
	AppliedAt      time.Time `json:"applied_at"`
}

func (s *Server) postOperation(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get(HeaderIdempotencyKey)
	switch {
	case key == "":
		writeError(w, http.StatusBadRequest, "the Idempotency-Key header is required")
		return
	case len(key) > IdempotencyKeyMaxLen:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Idempotency-Key is longer than %d characters", IdempotencyKeyMaxLen))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body exceeds %d bytes", MaxBodyBytes))
			return
		}
		writeError(w, http.StatusBadRequest, "could not read the body")
		return
	}
	var op Operation
	if err := json.Unmarshal(body, &op); err != nil {
		writeError(w, http.StatusBadRequest, "body is not a JSON operation: "+err.Error())
		return
	}
	if err := op.validate(); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	// The canonical form: bodies that differ only in spacing, field order
	// or unknown fields are the same request.
	canonical, _ := json.Marshal(op)
	sum := sha256.Sum256(canonical)
	hash := hex.EncodeToString(sum[:])

	ctx, cancel := context.WithTimeout(r.Context(), queryTimeout)
	defer cancel()
	status, resp, replayed, err := s.apply(ctx, key, hash, op)
	switch {
	case errors.Is(err, errKeyReused):
		s.conflicts.Add(1)
		writeError(w, http.StatusUnprocessableEntity, "Idempotency-Key was already used with a different body")
		return
	case err != nil:
		s.log.Error("warehouse operation failed", "idempotency_key", key, "error", err)
		writeError(w, http.StatusInternalServerError, "internal error")
		return
	}
	if replayed {
		w.Header().Set(HeaderReplayed, "true")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(resp)
}

// sql returns a statement written with ? placeholders in the database's
// form; CURRENT_TIMESTAMP(6) is the clock in both.
func (s *Server) sql(query string) string { return database.Rebind(s.cfg.Dialect, query) }

var errKeyReused = errors.New("idempotency key reused with a different body")

// apply records the key and applies op in one transaction, or returns the
// stored response of the key's first request.
func (s *Server) apply(ctx context.Context, key, hash string, op Operation) (status int, body []byte, replayed bool, err error) {
	tx, err := s.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return 0, nil, false, err
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, s.sql(
		"INSERT INTO warehouse_requests (idempotency_key, request_sha256, status_code, response_body, created_at) VALUES (?, ?, 0, '', CURRENT_TIMESTAMP(6))"),
		key, hash)
	if database.IsDuplicate(err) {
		tx.Rollback() // PostgreSQL has aborted it already
		return s.replay(ctx, key, hash)
	}
	if err != nil {
		return 0, nil, false, err
	}
	items, _ := json.Marshal(op.Items)
	const insert = "INSERT INTO warehouse_effects (idempotency_key, action, order_id, items, created_at) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP(6))"
	var id int64
	if database.OnPostgres(s.cfg.Dialect) {
		err = tx.QueryRowContext(ctx, s.sql(insert+" RETURNING id"), key, op.Action, op.OrderID, items).Scan(&id)
	} else {
		var res sql.Result
		if res, err = tx.ExecContext(ctx, insert, key, op.Action, op.OrderID, items); err == nil {
			id, err = res.LastInsertId()
		}
	}
	if err != nil {
		return 0, nil, false, err
	}
	body, _ = json.Marshal(Applied{ID: id, IdempotencyKey: key, Action: op.Action, OrderID: op.OrderID, Items: op.Items, AppliedAt: time.Now().UTC()})
	if _, err := tx.ExecContext(ctx, s.sql(
		"UPDATE warehouse_requests SET status_code = ?, response_body = ? WHERE idempotency_key = ?"),
		http.StatusCreated, string(body), key); err != nil {
		return 0, nil, false, err
	}
	if err := tx.Commit(); err != nil {
		return 0, nil, false, err
	}
	return http.StatusCreated, body, false, nil
}

func (s *Server) replay(ctx context.Context, key, hash string) (int, []byte, bool, error) {
	var storedHash string
	var status int
	var body []byte
	err := s.cfg.DB.QueryRowContext(ctx, s.sql(
		"SELECT request_sha256, status_code, response_body FROM warehouse_requests WHERE idempotency_key = ?"), key).
		Scan(&storedHash, &status, &body)
	if err != nil {
		return 0, nil, false, err
	}
	if storedHash != hash {
		return 0, nil, false, errKeyReused
	}
	if _, err := s.cfg.DB.ExecContext(ctx, s.sql(
		"UPDATE warehouse_requests SET replays = replays + 1 WHERE idempotency_key = ?"), key); err != nil {
		return 0, nil, false, err
	}
	return status, body, true, nil
}

// KeyRecord is the answer of GET /v1/operations/{key}.
type KeyRecord struct {
	IdempotencyKey string          `json:"idempotency_key"`
	StatusCode     int             `json:"status_code"`
	Replays        int64           `json:"replays"`
	Effects        int64           `json:"effects"`
	Response       json.RawMessage `json:"response"`
}

func (s *Server) getOperation(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), queryTimeout)
	defer cancel()
	rec := KeyRecord{IdempotencyKey: r.PathValue("key")}
	var body []byte
	err := s.cfg.DB.QueryRowContext(ctx, s.sql(`SELECT status_code, replays, response_body,
		(SELECT COUNT(*) FROM warehouse_effects e WHERE e.idempotency_key = q.idempotency_key)
		FROM warehouse_requests q WHERE idempotency_key = ?`), rec.IdempotencyKey).
		Scan(&rec.StatusCode, &rec.Replays, &body, &rec.Effects)
	if errors.Is(err, sql.ErrNoRows) {
		writeError(w, http.StatusNotFound, "no request with this idempotency key")
		return
	}
	if err != nil {
		s.log.Error("warehouse key lookup failed", "error", err)
		writeError(w, http.StatusInternalServerError, "internal error")
		return
	}
	if json.Valid(body) {
		rec.Response = body
	}
	writeJSON(w, http.StatusOK, rec)
}

// Stats is the answer of GET /stats.
type Stats struct {
	// Effects is how many operations were applied (one per key).
	Effects int64 `json:"effects"`
	// Requests is how many distinct keys were seen.
	Requests int64 `json:"requests"`
	// Replays is how many repeated requests got a stored response.
	Replays int64 `json:"replays"`
	// Conflicts is how many reused keys were refused since start.
	Conflicts int64 `json:"conflicts"`
}

func (s *Server) getStats(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), queryTimeout)
	defer cancel()
	var st Stats
	err := s.cfg.DB.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM warehouse_effects),
		(SELECT COUNT(*) FROM warehouse_requests),
		(SELECT COALESCE(SUM(replays), 0) FROM warehouse_requests)`).Scan(&st.Effects, &st.Requests, &st.Replays)
	if err != nil {
		s.log.Error("warehouse stats failed", "error", err)
		writeError(w, http.StatusInternalServerError, "internal error")
		return
	}
	st.Conflicts = s.conflicts.Load()
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) getHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.cfg.DB.PingContext(ctx); err != nil {
		writeError(w, http.StatusServiceUnavailable, "database unreachable")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err)
	}
	return sub
}
