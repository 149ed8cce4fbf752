package main

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"time"

	"github.com/dagenhq/dagen/runtime/metrics"
)

// scrapeMetrics gives the benchmark's engines a MeterProvider that
// exports to Prometheus, and scrapes its handler once a second until stop,
// so that -metrics costs what a scraped service pays: recording, and
// collecting and encoding once a second.
func (b *bench) scrapeMetrics() (stop func(), err error) {
	h, mp, err := metrics.NewPrometheus()
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	b.mp = mp
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			rec := httptest.NewRecorder()
			rec.Body = nil // encode, then drop
			h.ServeHTTP(discardWriter{rec}, httptest.NewRequest("GET", "/metrics", nil))
		}
	}()
	return func() {
		close(done)
		<-finished
		_ = mp.Shutdown(context.Background())
	}, nil
}

// discardWriter is a ResponseWriter that drops the body.
type discardWriter struct{ *httptest.ResponseRecorder }

func (discardWriter) Write(p []byte) (int, error) { return io.Discard.Write(p) }
