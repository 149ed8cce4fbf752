package engine_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

func TestTriggerValidatesTenants(t *testing.T) {
	eachStore(t, testTriggerValidatesTenants)
}

// testTriggerValidatesTenants triggers runs for tenants that would reach
// Postgres as raw errors (a NUL byte, invalid UTF-8, 10 KB of text) and
// others the engine rejects: each is an error matching ErrInvalidTenant
// that says what is wrong, and nothing is written, also for the good
// requests of a batch that holds a bad one. Valid tenants, unicode
// included, run.
func testTriggerValidatesTenants(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := open()
	var ran atomic.Int64
	def := &engine.Definition{Name: "tenants", Steps: []engine.Step{
		{Name: "s", Run: fn(func(context.Context, int, []string) (string, error) { ran.Add(1); return "ok", nil })},
	}}
	e, err := engine.New(st, &engine.Config{WorkerID: "w1", Concurrency: 4, PollInterval: 5 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, e.Register(def))

	bad := []struct {
		name, tenant, says string
	}{
		{"empty", "", `"": empty`},
		{"NUL byte", "acme\x00", `"acme\x00": control character U+0000 at byte 4`},
		{"invalid UTF-8", "acme\xff\xfe", `"acme\xff\xfe": not valid UTF-8 at byte 4`},
		{"10 KB of text", strings.Repeat("lorem ipsum ", 854), `"lorem ipsum lorem ipsum lorem ipsum lore"…: 10248 bytes long`},
		{"201 bytes", strings.Repeat("x", 201), `"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"…: 201 bytes long`},
		{"newline", "acme\nbeta", `"acme\nbeta": control character U+000A at byte 4`},
		{"tab", "\tacme", `"\tacme": control character U+0009 at byte 0`},
		{"DEL", "acme\x7f", `"acme\x7f": control character U+007F at byte 4`},
		{"C1 control", "acme\u0085", `"acme\u0085": control character U+0085 at byte 4`},
		{"leading space", " acme", `" acme": white space at the start`},
		{"trailing space", "acme ", `"acme ": white space at the end`},
		{"trailing no-break space", "acme\u00a0", `"acme\u00a0": white space at the end`},
	}
	good := []string{
		"t", "acme", "tenant-42", "Acme Corp", "ünïcødé", "東京", "🦀 crab", "\ufffd",
		"2b1f3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", strings.Repeat("é", store.MaxTenantLen/2),
	}

	inFlight := func() int {
		t.Helper()
		rep, err := st.InFlight(ctx, nil, 0)
		require.NoError(t, err)
		n := 0
		for _, w := range rep.Workflows {
			n += w.Runs
		}
		return n
	}

	// Not started, so a created run would wait in the queue, in flight.
	for _, tc := range bad {
		id, err := e.Trigger(ctx, "tenants", tc.tenant, 1)
		require.ErrorIs(t, err, engine.ErrInvalidTenant, tc.name)
		require.ErrorIs(t, err, store.ErrInvalidTenant, tc.name)
		require.ErrorContains(t, err, `trigger "tenants": invalid tenant `+tc.says, tc.name)
		require.ErrorContains(t, err, "a tenant is 1 to 200 bytes of UTF-8 text without control characters or white space at either end", tc.name)
		require.True(t, id.IsZero(), tc.name)

		ids, err := e.TriggerMany(ctx, []engine.TriggerRequest{
			{Workflow: "tenants", Tenant: "fine", Input: 1},
			{Workflow: "tenants", Tenant: tc.tenant, Input: 2},
		})
		require.ErrorIs(t, err, engine.ErrInvalidTenant, tc.name)
		require.Nil(t, ids, tc.name)
	}
	require.Zero(t, inFlight(), "no run of a rejected trigger, nor of a batch holding one, is created")

	ids := make(map[dag.RunID]string) // the tenants of the runs to wait for
	for _, tenant := range good {
		id, err := e.Trigger(ctx, "tenants", tenant, 1)
		require.NoError(t, err, "%q", tenant)
		ids[id] = tenant
	}
	require.Equal(t, len(good), inFlight())

	require.NoError(t, e.Start(ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.Stop(ctx)
	})
	// Started, a trigger may start its run's first step at once: the
	// tenant is checked before that too.
	_, err = e.Trigger(ctx, "tenants", "acme\x00", 1)
	require.ErrorIs(t, err, engine.ErrInvalidTenant)
	for _, tenant := range good {
		id, err := e.Trigger(ctx, "tenants", tenant, 1)
		require.NoError(t, err, "%q", tenant)
		ids[id] = tenant
	}
	for id, tenant := range ids {
		res, err := e.Wait(ctx, id)
		require.NoError(t, err, "%q", tenant)
		require.Equal(t, store.RunCompleted, res.Status)
		require.Equal(t, tenant, res.Tenant, "the tenant is stored as given")
	}
	require.Equal(t, int64(2*len(good)), ran.Load(), "only the valid tenants' runs ran")
}
