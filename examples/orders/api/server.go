package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/herald-outbox/herald/outbox"
)

// Request headers the service reads.
const (
	// IdempotencyKeyHeader makes POST /orders safe to retry: a request
	// carrying a key already used with the same order gets the first
	// request's answer (201, with "Idempotent-Replayed: true") and creates
	// nothing; with another order it gets 422.
	IdempotencyKeyHeader = "Idempotency-Key"
	// ReplayedHeader is set to "true" on an answer replayed for an
	// Idempotency-Key.
	ReplayedHeader = "Idempotent-Replayed"
	// TraceparentHeader is the W3C Trace Context header; the events of the
	// request carry it.
	TraceparentHeader = "traceparent"
	// RollbackHeader set to "1" makes POST /orders write its order and event
	// and then roll them back, answering 500 deliberate_rollback with the
	// would-be order id. Honoured only with Config.AllowRollbackHeader.
	RollbackHeader = "X-Herald-Rollback"
)

// Server is the orders HTTP API.
type Server struct {
	cfg     Config
	log     *slog.Logger
	writer  *outbox.Writer
	handler http.Handler
}

// New returns a Server for cfg; zero fields take their defaults. It does no
// I/O: apply the schema with Migrate, then call Run (or mount Handler).
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	w, err := outbox.NewWriter(cfg.Outbox)
	if err != nil {
		return nil, fmt.Errorf("orders config: Outbox: %w", err)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, writer: w}
	mux := http.NewServeMux()
	mux.HandleFunc("/orders", methods(map[string]http.HandlerFunc{http.MethodPost: s.handleCreate}))
	mux.HandleFunc("/orders/{id}", methods(map[string]http.HandlerFunc{http.MethodGet: s.handleGet}))
	mux.HandleFunc("/orders/{id}/cancel", methods(map[string]http.HandlerFunc{http.MethodPost: s.handleCancel}))
	mux.HandleFunc("/healthz", methods(map[string]http.HandlerFunc{http.MethodGet: s.handleHealth}))
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotFound, ErrorResponse{ErrorDetail{Code: CodeNotFound, Message: "no such resource"}})
	})
	s.handler = s.middleware(mux)
	return s, nil
}

// Handler returns the API's HTTP handler, for tests or for mounting in
// another server.
func (s *Server) Handler() http.Handler { return s.handler }

// Run listens on Config.Addr and serves until ctx is cancelled, then stops
// accepting connections and waits up to Config.ShutdownTimeout for the
// requests in flight. It returns nil after a clean shutdown.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.Addr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve is Run on a listener the caller opened; it closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	s.log.Info("listening", "addr", ln.Addr().String())

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("shutting down", "timeout", s.cfg.ShutdownTimeout.String())
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	s.log.Info("stopped")
	return nil
}

// middleware carries the request's traceparent into its context, turns a
// panic into a 500 and logs every request.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		if tp := r.Header.Get(TraceparentHeader); tp != "" {
			r = r.WithContext(outbox.ContextWithTraceparent(r.Context(), tp))
		}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.ErrorContext(r.Context(), "panic serving request", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p))
				if rec.status == 0 {
					writeJSON(rec, http.StatusInternalServerError, ErrorResponse{ErrorDetail{Code: CodeInternal, Message: "internal error"}})
				}
			}
			s.log.DebugContext(r.Context(), "request", "method", r.Method, "path", r.URL.Path,
				"status", rec.status, "duration_ms", time.Since(start).Milliseconds())
		}()
		next.ServeHTTP(rec, r)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

// Unwrap gives http.ResponseController the underlying writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// methods routes by method and answers any other method 405 with Allow.
func methods(handlers map[string]http.HandlerFunc) http.HandlerFunc {
	allowed := make([]string, 0, len(handlers))
	for m := range handlers {
		allowed = append(allowed, m)
	}
	slices.Sort(allowed)
	allow := strings.Join(allowed, ", ")
	return func(w http.ResponseWriter, r *http.Request) {
		h, ok := handlers[r.Method]
		if !ok {
			w.Header().Set("Allow", allow)
			writeJSON(w, http.StatusMethodNotAllowed, ErrorResponse{ErrorDetail{
				Code: CodeMethodNotAllowed, Message: fmt.Sprintf("%s is not allowed here; allowed: %s", r.Method, allow),
			}})
			return
		}
		h(w, r)
	}
}

// handleCreate is POST /orders.
func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			writeJSON(w, http.StatusUnsupportedMediaType, ErrorResponse{ErrorDetail{
				Code: CodeUnsupportedMediaType, Field: "Content-Type", Message: "the body must be application/json",
			}})
			return
		}
	}
	key, err := idempotencyKey(r.Header)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	req, err := decodeCreateOrder(http.MaxBytesReader(w, r.Body, RequestBodyMaxBytes))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rollback := s.cfg.AllowRollbackHeader && r.Header.Get(RollbackHeader) == "1"

	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	c, err := s.createOrder(ctx, req, key, rollback)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if c.replayed {
		w.Header().Set(ReplayedHeader, "true")
	} else {
		s.log.InfoContext(ctx, "order created", "order_id", c.orderID, "event_id", c.eventID)
		s.afterCommit()
	}
	w.Header().Set("Location", "/orders/"+strconv.FormatInt(c.orderID, 10))
	writeRawJSON(w, c.status, c.body)
}

// handleGet is GET /orders/{id}.
func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	id, ok := orderID(r)
	if !ok {
		s.fail(w, r, errNotFound)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	o, err := s.loadOrder(ctx, s.cfg.DB, id, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, o.api())
}

// handleCancel is POST /orders/{id}/cancel.
func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request) {
	id, ok := orderID(r)
	if !ok {
		s.fail(w, r, errNotFound)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	o, eventID, err := s.cancelOrder(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.InfoContext(ctx, "order cancelled", "order_id", o.id, "event_id", eventID)
	s.afterCommit()
	writeJSON(w, http.StatusOK, OrderResponse{OrderID: o.id, Status: o.status, TotalAmount: money(o.total)})
}

// afterCommit calls Config.AfterCommit, if set.
func (s *Server) afterCommit() {
	if s.cfg.AfterCommit != nil {
		s.cfg.AfterCommit()
	}
}

// handleHealth is GET /healthz: 200 when the database answers.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), time.Second)
	defer cancel()
	if err := s.cfg.DB.PingContext(ctx); err != nil {
		s.log.WarnContext(ctx, "health check: database does not answer", "error", err.Error())
		writeJSON(w, http.StatusServiceUnavailable, ErrorResponse{ErrorDetail{
			Code: CodeUnavailable, Message: "the database does not answer",
		}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// orderID reads the {id} path segment: a positive decimal integer.
func orderID(r *http.Request) (int64, bool) {
	s := r.PathValue("id")
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	id, err := strconv.ParseInt(s, 10, 64)
	return id, err == nil && id > 0
}
