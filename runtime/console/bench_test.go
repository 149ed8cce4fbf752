package console_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dagenhq/dagen/runtime/console"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store/memstore"
)

// BenchmarkRunPage200Steps renders the page of a finished run of a
// 200-step DAG: 10 layers of 20 steps, each step after two of the layer
// above.
//
//	go test ./runtime/console -run '^$' -bench RunPage -benchtime 20x
func BenchmarkRunPage200Steps(b *testing.B) {
	ctx := context.Background()
	st := memstore.New(nil)
	e, err := engine.New(st, &engine.Config{Manual: true, BatchSize: 500})
	if err != nil {
		b.Fatal(err)
	}
	ok := func(context.Context, engine.StepInput) ([]byte, error) { return engine.Encode("ok") }
	def := &engine.Definition{Name: "big"}
	const layers, width = 10, 20
	for l := range layers {
		for i := range width {
			s := engine.Step{Name: fmt.Sprintf("s%d_%d", l, i), OutputType: "string", Run: ok}
			if l > 0 {
				s.Parents = []engine.Parent{{Name: fmt.Sprintf("s%d_%d", l-1, i)}, {Name: fmt.Sprintf("s%d_%d", l-1, (i+7)%width)}}
			}
			def.Steps = append(def.Steps, s)
		}
	}
	if err := e.Register(def); err != nil {
		b.Fatal(err)
	}
	id, err := e.Trigger(ctx, "big", "t", 1)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.Wait(ctx, id); err != nil {
		b.Fatal(err)
	}
	h, err := console.New(st, console.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/runs/"+id.String(), nil))
		if rec.Code != 200 {
			b.Fatalf("status %d", rec.Code)
		}
	}
}

// BenchmarkRunPageMapped10k renders the page of a run whose mapped step
// has 10,000 elements, half of them done (the others still queued).
//
//	go test ./runtime/console -run '^$' -bench Mapped -benchtime 20x
func BenchmarkRunPageMapped10k(b *testing.B) {
	ctx := context.Background()
	st := memstore.New(nil)
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
	id, err := e.Trigger(ctx, "mapped", "t", 1)
	if err != nil {
		b.Fatal(err)
	}
	for range 3 { // list, the mapping, then one batch of 5,000 elements
		if _, err := e.Poll(ctx); err != nil {
			b.Fatal(err)
		}
	}
	h, err := console.New(st, console.Options{})
	if err != nil {
		b.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/runs/"+id.String(), nil))
	if !strings.Contains(rec.Body.String(), "more unfinished elements not listed") || !strings.Contains(rec.Body.String(), " of 10000") {
		b.Fatalf("the page lists every element or no progress:\n%.2000s", rec.Body.String())
	}
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/runs/"+id.String(), nil))
		if rec.Code != 200 {
			b.Fatalf("status %d", rec.Code)
		}
	}
}
