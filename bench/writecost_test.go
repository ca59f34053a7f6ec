package main

import (
	"strings"
	"testing"
)

// TestWriteCostConfigNamesTheFlag: each bad setting is refused naming its
// flag, all at once.
func TestWriteCostConfigNamesTheFlag(t *testing.T) {
	err := WriteCostConfig{Rounds: -1, TxPerRound: -2, PayloadBytes: 10}.withDefaults().validate()
	for _, flag := range []string{"--rounds", "--tx", "--payload-bytes"} {
		if err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("validate() = %v, want it to name %s", err, flag)
		}
	}
	if err := (WriteCostConfig{}).withDefaults().validate(); err != nil {
		t.Errorf("the defaults are refused: %v", err)
	}
}

func TestMedianOf(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want float64
	}{
		{"odd", []float64{5, 1, 3}, 3},
		{"even", []float64{4, 1, 3, 2}, 2.5},
		{"one", []float64{7}, 7},
		{"none", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := medianOf(tt.in); got != tt.want {
				t.Errorf("medianOf(%v) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// TestWriteCostTable: the ratios are of the medians, against the bare
// transaction and between (c) and (b).
func TestWriteCostTable(t *testing.T) {
	r := writeCostResult{Server: "mariadb",
		Median: map[string]float64{"bare": 1000, "go-writer": 1100, "plain-sql": 1045, "counter": 1200, "debezium-table": 1000, "foreign-copy": 1254},
		Low:    map[string]float64{"bare": 900, "go-writer": 1000, "plain-sql": 1000, "counter": 1100, "debezium-table": 950, "foreign-copy": 1200},
		Top:    map[string]float64{"bare": 1100, "go-writer": 1200, "plain-sql": 1100, "counter": 1300, "debezium-table": 1050, "foreign-copy": 1300}}
	table := writeCostTable(WriteCostConfig{}.withDefaults(), []writeCostResult{r}, 0)
	if want := "| mariadb | 1000 (900-1100) | 1100 (1000-1200) | 1045 (1000-1100) | 1200 (1100-1300) | +10 % | +4 % | -5 % |"; !strings.Contains(table, want) {
		t.Errorf("table:\n%s\nwant the row\n%s", table, want)
	}
	if want := "| mariadb | 1000 (950-1050) | 1254 (1200-1300) | +25 % | +20 % |"; !strings.Contains(table, want) {
		t.Errorf("table:\n%s\nwant the foreign table's row\n%s", table, want)
	}
}
