package outbox

import (
	"context"
	"regexp"
)

// TraceparentHeader is the W3C Trace Context header an event inherits from
// the context it is added under.
const TraceparentHeader = "traceparent"

type traceparentKey struct{}

// traceparentPattern is version 00 of W3C Trace Context: trace id and parent
// id in lowercase hex, neither all zeros (checked separately).
var traceparentPattern = regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`)

// ContextWithTraceparent returns ctx carrying a W3C traceparent (for example
// the incoming HTTP request's "traceparent" header). Events added under the
// returned context carry it in their headers. An invalid value is ignored.
func ContextWithTraceparent(ctx context.Context, traceparent string) context.Context {
	if !validTraceparent(traceparent) {
		return ctx
	}
	return context.WithValue(ctx, traceparentKey{}, traceparent)
}

// TraceparentFromContext returns the traceparent carried by ctx, if any.
func TraceparentFromContext(ctx context.Context) (string, bool) {
	tp, ok := ctx.Value(traceparentKey{}).(string)
	return tp, ok
}

func validTraceparent(tp string) bool {
	if !traceparentPattern.MatchString(tp) {
		return false
	}
	const zeroTrace, zeroParent = "00000000000000000000000000000000", "0000000000000000"
	return tp[3:35] != zeroTrace && tp[36:52] != zeroParent
}
