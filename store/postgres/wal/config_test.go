package wal_test

import (
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/store/changestream"
	"github.com/herald-outbox/herald/store/postgres/wal"
)

// TestPositionText: a position's text round-trips, orders by LSN, and
// what is not one is refused with the form it wants.
func TestPositionText(t *testing.T) {
	for _, tt := range []struct {
		name, text string
		want       string // "" when refused
	}{
		{"lsn", "pg-lsn:16/B374D848", "pg-lsn:16/B374D848"},
		{"spaces around", "  pg-lsn:0/1  ", "pg-lsn:0/1"},
		{"a binlog position", "mariadb-gtid:0-1-5", ""},
		{"no prefix", "16/B374D848", ""},
		{"zero", "pg-lsn:0/0", ""},
		{"garbage", "pg-lsn:xyz", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := wal.ParsePosition(tt.text)
			switch {
			case tt.want == "" && err == nil:
				t.Fatalf("ParsePosition(%q) = %s, want an error", tt.text, p)
			case tt.want == "" && !strings.Contains(err.Error(), "pg-lsn:"):
				t.Errorf("the error %q does not say the form wanted", err)
			case tt.want != "" && (err != nil || p.String() != tt.want):
				t.Errorf("ParsePosition(%q) = %q, %v; want %q", tt.text, p, err, tt.want)
			}
		})
	}
	a, _ := wal.ParsePosition("pg-lsn:1/0")
	b, _ := wal.ParsePosition("pg-lsn:0/FFFFFFFF")
	reached := func(p, target wal.Position) bool {
		t.Helper()
		ok, err := p.Reached(target)
		if err != nil {
			t.Fatalf("Reached(%s, %s): %v", p, target, err)
		}
		return ok
	}
	if !reached(a, b) || reached(b, a) || !reached(a, a) {
		t.Error("Reached does not order by LSN")
	}
	if _, err := a.Reached(wal.Position{}); err == nil {
		t.Error("Reached compared a position with no position")
	}
}

// TestSlotNameAndConfig: the derived slot name is one the server takes;
// a bad field is named.
func TestSlotNameAndConfig(t *testing.T) {
	for _, tt := range []struct{ database, want string }{
		{"orders", "herald_orders"},
		{"Orders-EU.1", "herald_orders_eu_1"},
		{strings.Repeat("x", 80), "herald_" + strings.Repeat("x", 56)},
	} {
		if got := wal.SlotName(tt.database); got != tt.want {
			t.Errorf("SlotName(%q) = %q, want %q", tt.database, got, tt.want)
		}
	}
	if got := wal.DefaultSlot("postgres://u@h:5432/orders?sslmode=disable"); got != "herald_orders" {
		t.Errorf("DefaultSlot = %q, want herald_orders", got)
	}
	for _, tt := range []struct {
		name  string
		cfg   wal.Config
		field string
	}{
		{"no URL", wal.Config{}, "URL"},
		{"a MySQL DSN", wal.Config{URL: "herald:herald@tcp(127.0.0.1:3306)/herald"}, "URL"},
		{"no database", wal.Config{URL: "postgres://u@h:5432"}, "URL"},
		{"a slot the server refuses", wal.Config{URL: "postgres://u@h/db", Slot: "Herald-Slot"}, "Slot"},
		{"negative interval", wal.Config{URL: "postgres://u@h/db", StatusInterval: -time.Second}, "StatusInterval"},
		{"negative chunk", wal.Config{URL: "postgres://u@h/db", Config: changestream.Config{ChunkEvents: -1}}, "ChunkEvents"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("Validate: %v, want an error naming %s", err, tt.field)
			}
		})
	}
	if err := (wal.Config{URL: "postgres://u@h/db"}).Validate(); err != nil {
		t.Errorf("a URL alone: %v", err)
	}
}
