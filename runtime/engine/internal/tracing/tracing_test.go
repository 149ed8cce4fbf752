package tracing

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// TestTraceParentRoundTrip: what TraceParent writes, Parse reads back as
// the same span context, remote; anything else does not parse.
func TestTraceParentRoundTrip(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	tp := TraceParent(trace.ContextWithSpanContext(context.Background(), sc))
	if want := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"; tp != want {
		t.Fatalf("TraceParent = %q, want %q", tp, want)
	}
	got, ok := Parse(tp)
	if !ok || !got.Equal(sc.WithRemote(true)) {
		t.Fatalf("Parse(%q) = %v, %v; want %v", tp, got, ok, sc)
	}
	if TraceID(tp) != sc.TraceID().String() {
		t.Fatalf("TraceID(%q) = %q", tp, TraceID(tp))
	}
	for _, bad := range []string{"", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz"} {
		if _, ok := Parse(bad); ok {
			t.Errorf("Parse(%q) is ok", bad)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = TraceParent(context.Background()) }); n != 0 {
		t.Errorf("TraceParent without a span allocates %v times", n)
	}
}
