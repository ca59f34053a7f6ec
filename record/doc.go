// Package record builds the Kafka record of an outbox event, in one of
// three formats chosen per aggregate type:
//
//   - herald (the default): the versioned envelope as the value and
//     herald's headers (docs/contracts.md);
//   - debezium: what Debezium's Outbox Event Router emits for the same row
//     with the same settings, so consumers written for it keep working
//     (docs/from-debezium.md);
//   - cloudevents: the CloudEvents Kafka protocol binding, binary content
//     mode (ce_* headers, the payload as the value) or structured.
//
// Every format keeps key = aggregate id, so an aggregate's records share a
// partition and keep their order. Start at Encoder: the relay, herald
// replay and the console's replays encode with it; FormatConfig chooses
// the formats and ParseFormat reads their names.
//
//	enc, err := record.NewEncoder(record.Config{
//		Topics:  map[string]string{"order": "orders.v1"},
//		Formats: record.FormatConfig{Default: record.CloudEvents},
//	})
//	if err != nil {
//		return err
//	}
//	rec, err := enc.Encode(event) // rec.Topic is "orders.v1"
package record
