package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/herald-outbox/herald/connector"
	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/migrations"
	"github.com/herald-outbox/herald/record"
)

// mappingFlags are --mapping and --mapping-set: a foreign outbox table's
// mapping and the debezium format's settings, read from a Debezium
// connector's configuration (docs/from-debezium.md), for herald migrate up
// and herald relay.
type mappingFlags struct {
	file string
	set  []string
}

func (f *mappingFlags) register(cmd *cobra.Command, env envFlags) {
	cmd.Flags().StringVar(&f.file, "mapping", "",
		"a Debezium connector's configuration (properties or JSON): the outbox table it reads and its Outbox Event Router's settings (docs/from-debezium.md)")
	cmd.Flags().StringSliceVar(&f.set, "mapping-set", nil,
		"key=value properties added to --mapping's, or given without it (repeatable)")
	env["mapping"] = "HERALD_MAPPING"
	env["mapping-set"] = "HERALD_MAPPING_SET"
}

// settings returns what --mapping and --mapping-set say, nil when neither
// was given.
func (f *mappingFlags) settings() (*connector.Settings, error) {
	if f.file == "" && len(f.set) == 0 {
		return nil, nil
	}
	props := connector.Properties{}
	if f.file != "" {
		var err error
		if props, err = connector.ReadFile(f.file); err != nil {
			return nil, usageError{fmt.Errorf("--mapping: %w", err)}
		}
	}
	if err := props.Set(f.set); err != nil {
		return nil, usageError{fmt.Errorf("--mapping-set: %w", err)}
	}
	s, err := connector.Interpret(props)
	if err != nil {
		return nil, usageError{fmt.Errorf("--mapping: %w", err)}
	}
	return &s, nil
}

// recordFlags are the record format flags of herald relay and herald
// replay: --record-format and the cloudevents format's settings; the
// debezium format's come from mappingFlags.
type recordFlags struct {
	formats  []string
	ceMode   string
	ceSource string
}

func (f *recordFlags) register(cmd *cobra.Command, env envFlags) {
	cmd.Flags().StringSliceVar(&f.formats, "record-format", []string{string(record.Herald)},
		"record format: herald, debezium (what Debezium's Outbox Event Router emits; settings from --mapping) or cloudevents; "+
			"aggregate_type=format entries give one aggregate type its own (repeatable or comma-separated)")
	cmd.Flags().StringVar(&f.ceMode, "cloudevents-mode", string(record.CloudEventsBinary),
		"the cloudevents format's content mode: binary (ce_* headers, the payload as the value) or structured (one JSON document)")
	cmd.Flags().StringVar(&f.ceSource, "cloudevents-source", record.CloudEventsSourceDefault,
		"the cloudevents format's source attribute; {aggregate_type} stands for the event's aggregate type")
	env["record-format"] = "HERALD_RECORD_FORMAT"
	env["cloudevents-mode"] = "HERALD_CLOUDEVENTS_MODE"
	env["cloudevents-source"] = "HERALD_CLOUDEVENTS_SOURCE"
}

// config returns the relay's record formats: --record-format's, the
// cloudevents flags and, for the debezium format, the settings of
// --mapping (Debezium's defaults without it). Every problem is reported at
// once, each naming its flag.
func (f *recordFlags) config(mapping *connector.Settings) (record.FormatConfig, []string) {
	var (
		cfg      record.FormatConfig
		problems []string
	)
	for _, entry := range f.formats {
		entry = strings.TrimSpace(entry)
		typ, name, perType := strings.Cut(entry, "=")
		if !perType {
			name = typ
		}
		format, err := record.ParseFormat(strings.TrimSpace(name))
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("--record-format: %q: %v", entry, err))
		case !perType && cfg.Default != "" && cfg.Default != format:
			problems = append(problems, fmt.Sprintf("--record-format: two formats for every aggregate type (%s and %s)", cfg.Default, format))
		case !perType:
			cfg.Default = format
		case strings.TrimSpace(typ) == "":
			problems = append(problems, fmt.Sprintf("--record-format: %q: want format or aggregate_type=format", entry))
		default:
			if cfg.ByAggregateType == nil {
				cfg.ByAggregateType = map[string]record.Format{}
			}
			cfg.ByAggregateType[strings.TrimSpace(typ)] = format
		}
	}
	cfg.CloudEvents = record.CloudEventsConfig{Mode: record.CloudEventsMode(f.ceMode), Source: f.ceSource}
	if mapping != nil {
		cfg.Debezium = mapping.Debezium
	}
	for _, e := range config.Leaves(cfg.Validate()) {
		var ce *config.Error
		if !errors.As(e, &ce) {
			problems = append(problems, e.Error())
			continue
		}
		switch {
		case ce.Field == "CloudEvents.Mode":
			problems = append(problems, "--cloudevents-mode: "+ce.Msg)
		case ce.Field == "CloudEvents.Source":
			problems = append(problems, "--cloudevents-source: "+ce.Msg)
		case strings.HasPrefix(ce.Field, "Debezium."):
			problems = append(problems, "--mapping: the Outbox Event Router's settings: "+
				strings.TrimPrefix(ce.Field, "Debezium.")+": "+ce.Msg)
		default:
			problems = append(problems, "--record-format: "+ce.Msg)
		}
	}
	return cfg, problems
}

// formatConfig returns the record formats the flags and m say, or a usage
// error naming every problem (herald replay and herald console; herald
// relay reports them with its other flags').
func (f *recordFlags) formatConfig(m *mappingFlags) (record.FormatConfig, error) {
	mapped, err := m.settings()
	if err != nil {
		return record.FormatConfig{}, err
	}
	cfg, problems := f.config(mapped)
	if len(problems) > 0 {
		return record.FormatConfig{}, usageError{errors.New(strings.Join(problems, "; "))}
	}
	return cfg, nil
}

// checkInstalledMapping fails unless db copies the inserts of s's foreign
// table as s maps them, with every field the record formats need: a relay
// started with a mapping migrate up never installed would publish nothing
// of that table (or records without their fields).
func checkInstalledMapping(ctx context.Context, db *sql.DB, s *connector.Settings) error {
	if s == nil || s.Mapping.Table == "" {
		return nil
	}
	want := s.Mapping
	installed, err := migrations.ReadMappings(ctx, db)
	if err != nil {
		return err
	}
	im, ok := installed[want.Table]
	if !ok {
		return fmt.Errorf("--mapping: nothing copies the inserts of table %s into outbox_events yet: "+
			"run herald migrate up --mapping with the same configuration first", want.Table)
	}
	got := im.Mapping
	var diffs []string
	for _, c := range []struct{ what, want, got string }{
		{"event id", want.ID, got.ID}, {"aggregate type", want.AggregateType, got.AggregateType},
		{"aggregate id", want.AggregateID, got.AggregateID}, {"event type", want.EventType, got.EventType},
		{"payload", want.Payload, got.Payload}, {"timestamp", want.Timestamp, got.Timestamp},
		{"schema version", want.SchemaVersion, got.SchemaVersion}, {"headers", want.Headers, got.Headers},
	} {
		if c.want != c.got {
			diffs = append(diffs, fmt.Sprintf("%s from column %q, the installed copy from %q", c.what, c.want, c.got))
		}
	}
	for _, f := range want.Fields {
		if !slices.Contains(got.Fields, f) {
			diffs = append(diffs, fmt.Sprintf("field %s, which the installed copy does not copy", f))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("--mapping: table %s: this configuration wants %s: run herald migrate up --mapping with it to install the copy it needs",
			want.Table, strings.Join(diffs, "; "))
	}
	return nil
}
