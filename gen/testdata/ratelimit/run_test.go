package ratelimit

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/dagenhq/dagen/runtime/dagtest"
	"github.com/dagenhq/dagen/runtime/engine"
)

// These tests check what the generated definitions say about priorities
// and rate limits, the bucket keys they derive from an encoded input, and
// that the typed handles run the workflows on dagtest.

func TestDefinitions(t *testing.T) {
	order, audit := OrderDefinition(), AuditDefinition()
	if order.Priority != 7 || audit.Priority != 0 {
		t.Errorf("priorities %d, %d; want 7, 0", order.Priority, audit.Priority)
	}
	wantOrder := []engine.RateLimit{{Name: "mail", Rate: 100}, {Name: "stripe", Rate: 100, Burst: 20}}
	if !slices.Equal(order.RateLimits, wantOrder) {
		t.Errorf("Order rate limits %+v; want %+v", order.RateLimits, wantOrder)
	}
	if want := []engine.RateLimit{{Name: "geo", Rate: 0.5}}; !slices.Equal(audit.RateLimits, want) {
		t.Errorf("Audit rate limits %+v; want %+v", audit.RateLimits, want)
	}
	for _, c := range []struct {
		step  engine.Step
		name  string
		units int
		key   bool
	}{
		{order.Steps[0], "stripe", 2, true},
		{order.Steps[1], "mail", 0, false},
		{order.Steps[2], "stripe", 0, true},
		{audit.Steps[0], "geo", 0, true},
	} {
		rl := c.step.RateLimit
		if rl == nil || rl.Name != c.name || rl.Units != c.units || (rl.Key != nil) != c.key {
			t.Errorf("step %s: rate limit %+v; want %s, %d units, key set %v", c.step.Name, rl, c.name, c.units, c.key)
		}
	}
}

// TestFingerprint checks that rate limits and priorities are no part of
// a workflow's signatures and fingerprint: changing them leaves runs in
// flight servable.
func TestFingerprint(t *testing.T) {
	def := OrderDefinition()
	if got := def.Fingerprint(); got != OrderFingerprint {
		t.Errorf("fingerprint %s; want %s", got, OrderFingerprint)
	}
	bare := OrderDefinition()
	bare.Priority, bare.RateLimits = 0, nil
	bare.Steps = slices.Clone(bare.Steps)
	for i := range bare.Steps {
		bare.Steps[i].RateLimit = nil
	}
	if got := bare.Fingerprint(); got != OrderFingerprint {
		t.Errorf("fingerprint without rate limits and priority %s; want %s", got, OrderFingerprint)
	}
	if !maps.Equal(bare.Signatures(), def.Signatures()) {
		t.Errorf("signatures without rate limits %v; want %v", bare.Signatures(), def.Signatures())
	}
}

func TestBucketKeys(t *testing.T) {
	order, audit := OrderDefinition(), AuditDefinition()
	for _, c := range []struct {
		key  func([]byte) (string, error)
		in   string
		want string
	}{
		{order.Steps[0].RateLimit.Key, `{"Customer":{"ID":"c-1","Region":3},"Amount":5}`, "c-1"},
		{order.Steps[2].RateLimit.Key, `{"Customer":{"ID":"c-1","Region":3},"Amount":5}`, "3"},
		{order.Steps[2].RateLimit.Key, `{"Customer":{"ID":"c-1"}}`, ""},
		{audit.Steps[0].RateLimit.Key, `{"Region":4294967295}`, "4294967295"},
	} {
		got, err := c.key([]byte(c.in))
		if err != nil || got != c.want {
			t.Errorf("bucket key of %s = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if _, err := order.Steps[0].RateLimit.Key([]byte(`{"Customer":7}`)); err == nil {
		t.Error("an input that does not decode gave a bucket key")
	}
}

func TestRun(t *testing.T) {
	ctx := context.Background()
	h := dagtest.New(t)
	orders, err := NewOrderWorkflow(h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	audits, err := NewAuditWorkflow(h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	o, err := orders.Start(ctx, "acme", Order{Customer: Customer{ID: "c-1", Region: 3}, Amount: 5})
	if err != nil {
		t.Fatal(err)
	}
	a, err := audits.Start(ctx, "acme", Audit{Region: 2})
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle(ctx)
	if res, err := o.Wait(ctx); err != nil || res.Charge != 5 || res.Notify != "charged 5" {
		t.Errorf("order = %+v, %v", res, err)
	}
	if res, err := a.Wait(ctx); err != nil || res.Locate != "region 2" {
		t.Errorf("audit = %+v, %v", res, err)
	}
}
