package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/dagenhq/dagen/internal/pgtest"
)

// TestDemo runs the demo on the in-memory store and checks that both
// branches appear in its output, and that starting the valid order again
// finds its run by its key.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), "", &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	t.Log(got)
	for _, want := range []string{"=> shipped: trk-demo-valid", "=> rejected: amount must be positive", "SKIPPED", "(slept)", "of Shipment: COMPLETED", "BuyLabel   COMPLETED"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	first := regexp.MustCompile(`order demo-valid \(.*\)\nrun (\S+)\n`).FindStringSubmatch(got)
	if first == nil {
		t.Fatal("output lacks the valid order's run")
	}
	if want := "order demo-valid again: same run " + first[1] + ", duplicate\n"; !strings.Contains(got, want) {
		t.Errorf("output lacks %q", want)
	}
}

// TestDemoPostgres runs the demo on Postgres, where each order and its run
// are started in one transaction (StartTx): both orders are in the demo's
// table, and the valid one, placed again, finds its run.
func TestDemoPostgres(t *testing.T) {
	schema := pgtest.Schema(t)
	var out bytes.Buffer
	if err := run(context.Background(), pgtest.SchemaURL(t, schema), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{"store: postgres", "=> shipped: trk-demo-valid", "=> rejected: amount must be positive", ", duplicate\n", "of Shipment: COMPLETED"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q\n%s", want, got)
		}
	}
	pool := pgtest.Pool(t, schema, 1)
	var orders int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM demo_orders").Scan(&orders); err != nil {
		t.Fatal(err)
	}
	if orders != 2 {
		t.Errorf("demo_orders has %d rows, want 2", orders)
	}
}
