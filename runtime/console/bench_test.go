package console_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dagenhq/dagen/runtime/console"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
)

// The console's page timings: each page rendered whole, from the store's
// reads to the last byte of HTML, against Postgres (a fresh schema) and
// the in-memory store.
//
//	go test ./runtime/console -run '^$' -bench . -benchtime 20x

// benchStores runs bench once per store, each opened fresh.
func benchStores(b *testing.B, bench func(b *testing.B, st store.Store)) {
	b.Run("postgres", func(b *testing.B) { bench(b, pgStore(b)) })
	b.Run("memstore", func(b *testing.B) { bench(b, memstore.New(nil)) })
}

// benchPage renders path b.N times and fails unless every answer is 200
// and the first contains each of want.
func benchPage(b *testing.B, st store.Store, path string, want ...string) {
	h, err := console.New(st, console.Options{})
	if err != nil {
		b.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	for _, w := range want {
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), w) {
			b.Fatalf("GET %s: status %d, no %q in:\n%.3000s", path, rec.Code, w, rec.Body.String())
		}
	}
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != 200 {
			b.Fatalf("GET %s: status %d", path, rec.Code)
		}
	}
}

// BenchmarkRunPage200Steps renders the page of a finished run of a
// 200-step DAG: 10 layers of 20 steps, each step after two of the layer
// above.
func BenchmarkRunPage200Steps(b *testing.B) {
	benchStores(b, func(b *testing.B, st store.Store) {
		e, err := engine.New(st, &engine.Config{Manual: true, BatchSize: 500})
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Register(wideDAG(10, 20)); err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		id, err := e.Trigger(ctx, "big", "t", 1)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.Wait(ctx, id); err != nil {
			b.Fatal(err)
		}
		benchPage(b, st, "/runs/"+id.String(), `data-step="s9_19"`)
	})
}

// wideDAG is a workflow "big" of layers × width steps, each after two
// steps of the layer above.
func wideDAG(layers, width int) *engine.Definition {
	ok := func(context.Context, engine.StepInput) ([]byte, error) { return engine.Encode("ok") }
	def := &engine.Definition{Name: "big"}
	for l := range layers {
		for i := range width {
			s := engine.Step{Name: fmt.Sprintf("s%d_%d", l, i), OutputType: "string", Run: ok}
			if l > 0 {
				s.Parents = []engine.Parent{{Name: fmt.Sprintf("s%d_%d", l-1, i)}, {Name: fmt.Sprintf("s%d_%d", l-1, (i+7)%width)}}
			}
			def.Steps = append(def.Steps, s)
		}
	}
	return def
}

// BenchmarkRunPageMapped10k renders the page of a run whose mapped step
// has 10,000 elements, half of them done (the others still queued).
func BenchmarkRunPageMapped10k(b *testing.B) {
	benchStores(b, func(b *testing.B, st store.Store) {
		e, err := engine.New(st, &engine.Config{Manual: true, BatchSize: 5000})
		if err != nil {
			b.Fatal(err)
		}
		items := func(context.Context, engine.StepInput) ([]byte, error) {
			xs := make([]int, 10_000)
			for i := range xs {
				xs[i] = i
			}
			return engine.Encode(xs)
		}
		each := func(_ context.Context, in engine.StepInput) ([]byte, error) { return engine.Encode("done") }
		def := &engine.Definition{Name: "mapped", Steps: []engine.Step{
			{Name: "list", OutputType: "[]int", Run: items},
			{Name: "work", OutputType: "string", Parents: []engine.Parent{{Name: "list"}}, Each: "list", Run: each},
		}}
		if err := e.Register(def); err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		id, err := e.Trigger(ctx, "mapped", "t", 1)
		if err != nil {
			b.Fatal(err)
		}
		for range 3 { // list, the mapping, then one batch of 5,000 elements
			if _, err := e.Poll(ctx); err != nil {
				b.Fatal(err)
			}
		}
		benchPage(b, st, "/runs/"+id.String(), "more unfinished elements not listed", " of 10000")
	})
}

// BenchmarkRunsPage1M renders the runs page over a million runs of 10
// workflows and 100 tenants, one in a hundred failed, one in a thousand
// running: the first page, a status, a tenant, and the page of the
// failed runs of one tenant. The runs are inserted by SQL, as the store
// would have written them, before the timer starts (see
// docs/performance.md, "Tests: figures from their comments").
func BenchmarkRunsPage1M(b *testing.B) {
	ctx := context.Background()
	st := pgStore(b)
	// UUIDv7-shaped ids, a millisecond apart, as dag.NewRunID makes them.
	const seed = `
INSERT INTO dagen_runs (id, workflow, fingerprint, tenant, status, input, failure_step, failure_attempt, failure_message, pending, created_at, finished_at)
SELECT (lpad(to_hex(1763000000000 + g), 12, '0') || '7000' || '8000' || lpad(to_hex(g), 12, '0'))::uuid,
       'wf' || (g % 10), 'fp', 't' || (g % 100),
       CASE WHEN g % 1000 = 7 THEN 'RUNNING' WHEN g % 100 = 3 THEN 'FAILED' ELSE 'COMPLETED' END,
       '1'::bytea,
       CASE WHEN g % 100 = 3 THEN 'charge' END, CASE WHEN g % 100 = 3 THEN 3 END,
       CASE WHEN g % 100 = 3 THEN 'card declined' END,
       CASE WHEN g % 1000 = 7 THEN 1 ELSE 0 END,
       to_timestamp((1763000000000 + g) / 1000.0),
       CASE WHEN g % 1000 = 7 THEN NULL ELSE to_timestamp((1763000000000 + g) / 1000.0 + 2) END
FROM generate_series(1, 1000000) AS g;
ANALYZE dagen_runs;`
	if _, err := st.Pool().Exec(ctx, seed); err != nil {
		b.Fatal(err)
	}
	for _, p := range []struct{ name, path, want string }{
		{"newest", "/", "<b>989000</b>"}, // completed: a million less 10,000 failed and 1,000 running
		{"failed", "/?status=failed", "charge: card declined"},
		{"tenant", "/?tenant=t42", "t42"},
		{"tenant-failed", "/?tenant=t3&status=failed", "charge: card declined"},
	} {
		b.Run(p.name, func(b *testing.B) { benchPage(b, st, p.path, p.want) })
	}
}
