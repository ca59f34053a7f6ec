package connector

import (
	"strings"
	"testing"
)

// TestInterpretRequiresTheRouter: a connector's configuration whose
// transforms do not route through an Outbox Event Router is refused,
// naming what is missing, as are router keys under an alias transforms=
// does not declare (Kafka Connect never reads them); among several
// transforms the router's alias is used whatever it is called.
func TestInterpretRequiresTheRouter(t *testing.T) {
	const router = "io.debezium.transforms.outbox.EventRouter"
	for _, tt := range []struct {
		name  string
		props Properties
		wants []string
	}{
		{"router keys, no transforms= (issue 35's file)",
			Properties{"table.include.list": "db.outbox", "transforms.outbox.table.field.event.payload": "nosuchcol"},
			[]string{"transforms.outbox.table.field.event.payload: transforms= does not declare outbox",
				"transforms: no Outbox Event Router: transforms= declares no transform"}},
		{"the alias declared, its type missing",
			Properties{"table.include.list": "db.outbox", "transforms": "outbox", "transforms.outbox.table.field.event.payload": "body"},
			[]string{"transforms.outbox.type: missing (transforms= declares outbox", "transforms: no Outbox Event Router"}},
		{"the alias of another type",
			Properties{"table.include.list": "db.outbox", "transforms": "outbox", "transforms.outbox.type": "io.debezium.transforms.ExtractNewRecordState"},
			[]string{"transforms: no Outbox Event Router: transforms= declares outbox, none of type " + router}},
		{"a connector without transforms",
			Properties{"connector.class": "io.debezium.connector.mariadb.MariaDbConnector", "table.include.list": "db.outbox"},
			[]string{"transforms: no Outbox Event Router: transforms= declares no transform"}},
		{"two routers",
			Properties{"table.include.list": "db.outbox", "transforms": "a,b", "transforms.a.type": router, "transforms.b.type": router},
			[]string{"transforms: a, b are each an Outbox Event Router"}},
		{"keys under an undeclared alias beside the router, each named",
			Properties{"table.include.list": "db.outbox", "transforms": "outbox", "transforms.outbox.type": router,
				"transforms.outbx.route.by.field": "kind", "transforms.outbx.table.field.event.key": "agg"},
			[]string{"transforms.outbx.route.by.field: transforms= does not declare outbx",
				"transforms.outbx.table.field.event.key: transforms= does not declare outbx"}},
	} {
		_, err := Interpret(tt.props)
		for _, want := range tt.wants {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: err %v\nwant it to say %q", tt.name, err, want)
			}
		}
	}

	s, err := Interpret(Properties{"connector.class": "io.debezium.connector.mariadb.MariaDbConnector", "table.include.list": "db.outbox",
		"transforms": "unwrap, route", "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
		"transforms.route.type": router, "transforms.route.table.field.event.payload": "body"})
	if err != nil || s.Mapping.Payload != "body" {
		t.Errorf("the router under the alias route: payload %q, err %v; want body", s.Mapping.Payload, err)
	}
}
