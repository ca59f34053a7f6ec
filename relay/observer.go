package relay

import (
	"time"

	"github.com/herald-outbox/herald/store"
)

// Observer is told what the relay does; package metrics implements it with
// Prometheus collectors. Methods are called from the relay's goroutine and
// from the one settling its previous batch, so they must be safe for
// concurrent use, and must not block.
type Observer interface {
	// Claimed reports one claim (also an empty one).
	Claimed(c store.Claim)
	// Published reports records acknowledged on a topic's partition.
	Published(topic string, partition int32, records int)
	// PublishedBatch reports how long producing a batch took.
	PublishedBatch(d time.Duration, records int)
	// Failed reports one failed publication; quarantined says it was
	// isolated.
	Failed(class string, quarantined bool)
	// Settled reports the outcome of marking a batch.
	Settled(s store.Settled)
}

// RebalanceObserver is told about the relay's turns at the bucket table;
// an Observer may implement it (package metrics does).
type RebalanceObserver interface {
	// Rebalanced reports one turn.
	Rebalanced(rb store.Rebalance)
}

// DeliveryObserver is told how long each published event took from its
// occurred_at to Kafka's acknowledgement; an Observer may implement it
// (package metrics does). source is SourcePoll or SourceStream.
type DeliveryObserver interface {
	Delivered(source string, delay time.Duration)
}

// SourceObserver is told, when the relay starts, which source it reads:
// SourcePoll, or SourceStream for a relay with a change-stream Source; an Observer
// may implement it (package metrics does).
type SourceObserver interface {
	Started(source string)
}

// SweepObserver is told about each sweep of the outbox through the polling
// path before a stream starts: positionLost when the checkpoint was no
// longer on the server (docs/design.md, section 9.6), otherwise the stream
// had none yet; an Observer may implement it (package metrics does).
type SweepObserver interface {
	Swept(positionLost bool, events int)
}

// CleanupObserver is told about each cleanup pass: its report and error
// (CleanerConfig.Observer; package metrics implements it).
type CleanupObserver interface {
	CleanedUp(rep store.CleanupReport, err error)
}

type nopObserver struct{}

func (nopObserver) Claimed(store.Claim)               {}
func (nopObserver) Published(string, int32, int)      {}
func (nopObserver) PublishedBatch(time.Duration, int) {}
func (nopObserver) Failed(string, bool)               {}
func (nopObserver) Settled(store.Settled)             {}
