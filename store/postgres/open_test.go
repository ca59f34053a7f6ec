package postgres_test

import (
	"strings"
	"testing"

	"github.com/herald-outbox/herald/store/postgres"
)

func TestIsURL(t *testing.T) {
	for dsn, want := range map[string]bool{
		"postgres://u:p@db:5432/app":             true,
		"postgresql://u:p@db/app?sslmode=verify": true,
		"POSTGRES://db/app":                      true,
		"u:p@tcp(db:3306)/app":                   false,
		"herald:herald@tcp(127.0.0.1:3306)/x":    false,
		"host=db user=u dbname=app":              false,
		"mysql://u:p@db/app":                     false,
	} {
		if got := postgres.IsURL(dsn); got != want {
			t.Errorf("IsURL(%q) = %v, want %v", dsn, got, want)
		}
	}
}

func TestParseURL(t *testing.T) {
	cfg, err := postgres.ParseURL("postgres://app:secret@db:6432/orders?sslmode=disable&application_name=orders-api")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "db" || cfg.Port != 6432 || cfg.Database != "orders" || cfg.User != "app" {
		t.Errorf("parsed %s:%d/%s as %s", cfg.Host, cfg.Port, cfg.Database, cfg.User)
	}
	if cfg.RuntimeParams["timezone"] != "UTC" || cfg.RuntimeParams["application_name"] != "orders-api" {
		t.Errorf("runtime params %v: want timezone UTC and the URL's application_name", cfg.RuntimeParams)
	}
	if cfg, _ := postgres.ParseURL("postgres://app@db/orders"); cfg.RuntimeParams["application_name"] != "herald" {
		t.Errorf("application_name %q, want herald by default", cfg.RuntimeParams["application_name"])
	}
	for _, bad := range []string{
		"postgres://app:hunter2@db:notaport/orders",
		"postgres://app:hunter2@[::1/orders",
		"postgres://app:hunter2@db/orders%zz",
		"postgres://app:hunter2@db/orders?sslmode=sometimes",
		"postgres://app:hunter2@db/orders?connect_timeout=soon",
	} {
		_, err := postgres.ParseURL(bad)
		if err == nil {
			t.Errorf("ParseURL(%q) accepted it", bad)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error %q leaks the password", err)
		}
		t.Logf("%s: %v", bad, err)
	}
}

func TestAddress(t *testing.T) {
	if got := postgres.Address("postgres://app:secret@db:5432/orders?sslmode=require"); got != "db:5432/orders" {
		t.Errorf("Address = %q", got)
	}
}
