package inbox

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/record"
	"github.com/herald-outbox/herald/store"
)

// TestCloudEventsSchemaVersion: the event's schema version travels in
// herald's cloudevents records in both content modes (the schemaversion
// extension attribute) and the inbox reads it back as Message.Version; a
// schemaversion that is no version is refused as malformed.
func TestCloudEventsSchemaVersion(t *testing.T) {
	e := store.Event{ID: testID, AggregateType: "order", AggregateID: "7", EventType: "order.created", SchemaVersion: 3,
		Payload: []byte(testOrder), OccurredAt: time.Date(2026, 9, 26, 2, 12, 30, 0, time.UTC)}
	for _, mode := range []record.CloudEventsMode{record.CloudEventsBinary, record.CloudEventsStructured} {
		enc, err := record.NewEncoder(record.Config{DefaultTopic: "orders.v1", Formats: record.FormatConfig{
			Default: record.CloudEvents, CloudEvents: record.CloudEventsConfig{Mode: mode}}})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := enc.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeCloudEvents(rec)
		if err != nil || got.Version != 3 || got.EventID != testID {
			t.Errorf("%s: decoded %+v, %v; want version 3", mode, got, err)
		}
	}
	for _, rec := range []*kgo.Record{
		{Headers: hdrs("ce_specversion", "1.0", "ce_id", testID, "ce_schemaversion", "two"), Value: []byte(testOrder)},
		{Headers: hdrs("content-type", "application/cloudevents+json"),
			Value: []byte(`{"specversion":"1.0","id":"` + testID + `","schemaversion":70000,"data":{}}`)},
	} {
		if _, err := decodeCloudEvents(rec); err == nil {
			t.Errorf("a record with schemaversion that is no version was read: %v", rec.Headers)
		}
	}
}
