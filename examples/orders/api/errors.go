package api

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/herald-outbox/herald/database"
)

// Error codes of the API's error answers.
const (
	CodeMalformedJSON        = "malformed_json"         // 400: not one JSON object
	CodeUnknownField         = "unknown_field"          // 400: a field the API does not know
	CodeDuplicateField       = "duplicate_field"        // 400: a field given twice in one object
	CodeMissingValue         = "missing_value"          // 400: a required value is absent, null or empty
	CodeInvalidValue         = "invalid_value"          // 400: a value is out of range or of the wrong form
	CodeUnsupportedMediaType = "unsupported_media_type" // 415: the body is not application/json
	CodeBodyTooLarge         = "body_too_large"         // 413: the body exceeds RequestBodyMaxBytes
	CodeNotFound             = "not_found"              // 404
	CodeMethodNotAllowed     = "method_not_allowed"     // 405
	CodeAlreadyCancelled     = "already_cancelled"      // 409: the order was cancelled before
	CodeIdempotencyKeyReused = "idempotency_key_reused" // 422: the key came with another order
	CodeDeliberateRollback   = "deliberate_rollback"    // 500: X-Herald-Rollback asked for it
	CodeTimeout              = "timeout"                // 503: the database work ran out of time
	CodeUnavailable          = "unavailable"            // 503: the database does not answer
	CodeInternal             = "internal"               // 500: anything else, logged
)

// ErrorResponse is the body of every error answer.
type ErrorResponse struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong. Field names the offending request field
// ("items[0].unit_price", or a header name) when there is one; OrderID is
// set only for deliberate_rollback, naming the order that was rolled back.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	OrderID int64  `json:"order_id,omitempty"`
}

// apiError is an error the client is told about as is.
type apiError struct {
	status int
	detail ErrorDetail
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%d %s: %s %s", e.status, e.detail.Code, e.detail.Field, e.detail.Message)
}

func badRequest(code, field, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, detail: ErrorDetail{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}}
}

var (
	errNotFound = &apiError{status: http.StatusNotFound,
		detail: ErrorDetail{Code: CodeNotFound, Message: "no such order"}}
	errAlreadyCancelled = &apiError{status: http.StatusConflict,
		detail: ErrorDetail{Code: CodeAlreadyCancelled, Message: "the order is already cancelled"}}
	errKeyReused = &apiError{status: http.StatusUnprocessableEntity,
		detail: ErrorDetail{Code: CodeIdempotencyKeyReused, Field: IdempotencyKeyHeader,
			Message: "this Idempotency-Key was used with a different order"}}
)

// deliberateRollback is returned from inside the create transaction when the
// client asked for a rollback: the transaction is rolled back and the client
// learns which order it would have created.
type deliberateRollback struct{ orderID int64 }

func (e deliberateRollback) Error() string {
	return fmt.Sprintf("deliberate rollback of order %d", e.orderID)
}

// databaseUnreachable says whether err means the database could not be
// reached or the connection broke (as opposed to the database refusing the
// statement).
func databaseUnreachable(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysqldriver.ErrInvalidConn) ||
		database.Unavailable(err)
}

// fail answers err: its own status for an *apiError, 503 when the database
// is unreachable, 500 for everything else, whose cause is logged but never
// shown.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var (
		ae *apiError
		dr deliberateRollback
	)
	switch {
	case errors.As(err, &ae):
		writeJSON(w, ae.status, ErrorResponse{ae.detail})
	case errors.As(err, &dr):
		s.log.InfoContext(r.Context(), "deliberate rollback", "order_id", dr.orderID)
		writeJSON(w, http.StatusInternalServerError, ErrorResponse{ErrorDetail{
			Code: CodeDeliberateRollback, OrderID: dr.orderID,
			Message: "the order was written and then rolled back, as X-Herald-Rollback asked",
		}})
	case databaseUnreachable(err):
		// Nothing was committed: the transaction never reached the server,
		// or the connection broke before the commit's answer (the client's
		// retry with the same Idempotency-Key then finds a committed order).
		s.log.WarnContext(r.Context(), "database unreachable", "method", r.Method, "path", r.URL.Path, "error", err.Error())
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, ErrorResponse{ErrorDetail{
			Code: CodeUnavailable, Message: "the database does not answer; retry (with the same Idempotency-Key)",
		}})
	case errors.Is(err, context.DeadlineExceeded):
		s.log.WarnContext(r.Context(), "request timed out", "method", r.Method, "path", r.URL.Path, "error", err.Error())
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, ErrorResponse{ErrorDetail{
			Code: CodeTimeout, Message: "the request ran out of time and was rolled back; retry it (with the same Idempotency-Key)",
		}})
	default:
		level := slog.LevelError
		if errors.Is(err, context.Canceled) {
			level = slog.LevelInfo // the client went away; nothing was committed
		}
		s.log.Log(r.Context(), level, "request failed", "method", r.Method, "path", r.URL.Path, "error", err.Error())
		writeJSON(w, http.StatusInternalServerError, ErrorResponse{ErrorDetail{
			Code: CodeInternal, Message: "internal error",
		}})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only the API's own types are written; they always encode.
		panic(fmt.Sprintf("encode response: %v", err))
	}
	writeRawJSON(w, status, b)
}

func writeRawJSON(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
