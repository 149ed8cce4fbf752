package main

import (
	"context"
	"fmt"
	"sync/atomic"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// startTracing gives the benchmark's engines an SDK TracerProvider that
// samples every span and batches them to an exporter that drops them, and
// returns ctx under a span, so that the runs triggered with it are traced:
// -traces costs what a traced service pays but the export's network.
func (b *bench) startTracing(ctx context.Context) (context.Context, func()) {
	exp := &discardSpans{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	b.tp = tp
	ctx, span := tp.Tracer("bench").Start(ctx, "bench")
	return ctx, func() {
		span.End()
		_ = tp.Shutdown(context.Background())
		fmt.Fprintf(b.log, "bench: traces: %d spans exported (and dropped)\n", exp.n.Load())
	}
}

// discardSpans is a SpanExporter that counts what it is given and drops it.
type discardSpans struct{ n atomic.Int64 }

func (d *discardSpans) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	d.n.Add(int64(len(spans)))
	return nil
}
func (*discardSpans) Shutdown(context.Context) error { return nil }

var _ trace.TracerProvider = (*sdktrace.TracerProvider)(nil)
