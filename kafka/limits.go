package kafka

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Record size limits. Sizes are counted as Kafka counts a topic's
// max.message.bytes: the whole record batch (its 61-byte header included),
// before compression.
const (
	// MaxRecordBytesDefault is ProducerConfig.MaxRecordBytes's default, and
	// the max.message.bytes `herald topics create` gives a new topic: room
	// for the largest event the outbox writer accepts by default, a 1 MiB
	// payload (outbox.MaxPayloadBytesDefault), plus RecordOverheadMax.
	MaxRecordBytesDefault = 1<<20 + RecordOverheadMax
	// RecordOverheadMax bounds what a record adds to its event's payload
	// when every other field is at the writer's maximum: the envelope
	// (under 1 KiB, since the payload is copied into it unescaped), the key
	// (128 characters, at most 512 bytes), herald's headers (under 1 KiB)
	// and the event's own (32 of 128+1024 characters, at most 144 KiB),
	// with room to spare. A test builds that record and measures it.
	RecordOverheadMax = 256 << 10
	// MaxRecordBytesMin and MaxRecordBytesMax bound ProducerConfig.MaxRecordBytes.
	MaxRecordBytesMin = 1 << 10
	MaxRecordBytesMax = 64 << 20

	// recordBatchHeaderBytes is a v2 record batch without records: base
	// offset, length, leader epoch, magic, CRC, attributes, last offset
	// delta, two timestamps, producer id and epoch, base sequence, count.
	recordBatchHeaderBytes = 61
)

// RecordBatchBytes is the size of a batch holding only r, uncompressed, as
// Kafka compares it with max.message.bytes. The first record of a batch
// has zero offset and timestamp deltas.
func RecordBatchBytes(r *kgo.Record) int {
	n := 1 + varintLen(0) + varintLen(0) + // attributes, timestamp and offset deltas
		varintLen(int64(len(r.Key))) + len(r.Key) +
		varintLen(int64(len(r.Value))) + len(r.Value) +
		varintLen(int64(len(r.Headers)))
	for _, h := range r.Headers {
		n += varintLen(int64(len(h.Key))) + len(h.Key) + varintLen(int64(len(h.Value))) + len(h.Value)
	}
	return recordBatchHeaderBytes + varintLen(int64(n)) + n
}

// varintLen is the length of v as a zigzag varint.
func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// ValidateMaxRecordBytes checks a record size limit.
func ValidateMaxRecordBytes(n int) error {
	if n < MaxRecordBytesMin || n > MaxRecordBytesMax {
		return fmt.Errorf("must be %d..%d bytes, got %d", MaxRecordBytesMin, MaxRecordBytesMax, n)
	}
	return nil
}

// CheckTopicLimit compares a described topic's max.message.bytes with the
// records a producer limited to maxRecordBytes may send; it returns an
// error saying what to do when the topic would refuse some of them.
func CheckTopicLimit(d TopicDescription, maxRecordBytes int) error {
	v, ok := d.Configs["max.message.bytes"]
	if !ok {
		return nil
	}
	topicMax, err := strconv.Atoi(v)
	if err != nil || topicMax >= maxRecordBytes {
		return nil
	}
	return fmt.Errorf("topic %s: max.message.bytes is %d, below the relays' record limit of %d bytes "+
		"(--max-record-bytes): events the writer accepts may be refused as too_large and quarantined. "+
		"Raise the topic's max.message.bytes to at least %d (kafka-configs --alter --entity-type topics "+
		"--entity-name %s --add-config max.message.bytes=%d), or lower both the relays' --max-record-bytes "+
		"and the writers' outbox.Config.MaxPayloadBytes",
		d.Name, topicMax, maxRecordBytes, maxRecordBytes, d.Name, maxRecordBytes)
}
