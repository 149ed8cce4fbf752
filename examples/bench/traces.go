package main

import (
	"context"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// startTracing gives the benchmark's engines an SDK TracerProvider that
// samples every span and batches them to an exporter that drops them, and
// returns ctx under a span, so that the runs triggered with it are traced:
// -traces costs what a traced service pays but the export's network.
func (b *bench) startTracing(ctx context.Context) (context.Context, func()) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardSpans{}))
	b.tp = tp
	ctx, span := tp.Tracer("bench").Start(ctx, "bench")
	return ctx, func() {
		span.End()
		_ = tp.Shutdown(context.Background())
	}
}

// discardSpans is a SpanExporter that drops what it is given.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

var _ trace.TracerProvider = (*sdktrace.TracerProvider)(nil)
