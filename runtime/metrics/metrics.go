// Package metrics serves dagen's metrics to Prometheus: an OpenTelemetry
// SDK MeterProvider, to pass to engine.Config.MeterProvider, and the
// handler that serves what it measured at /metrics. The engine itself
// depends on the OpenTelemetry metrics API only; this package is where the
// SDK and the Prometheus exporter come in, for programs that want them.
//
//	h, mp, err := metrics.NewPrometheus()
//	eng, err := engine.New(st, &engine.Config{MeterProvider: mp})
//	mux.Handle("/metrics", h)
//
// docs/operating.md, "Metrics", lists the metrics.
package metrics

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Options configures NewPrometheus. The zero value serves dagen's metrics
// with the Go runtime's and the process's.
type Options struct {
	// Registry receives the exporter's collector; nil makes a registry of
	// its own, so that two engines in one process, or a test, do not
	// collide in prometheus.DefaultRegisterer.
	Registry *prometheus.Registry
	// NoRuntime leaves out the Go runtime's and the process's collectors
	// from a registry NewPrometheus makes.
	NoRuntime bool
}

// NewPrometheus returns a handler that serves, in Prometheus's text
// format, what the returned MeterProvider measures. Shut the provider
// down (Shutdown) when the program ends.
func NewPrometheus(opts ...Options) (http.Handler, *sdkmetric.MeterProvider, error) {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	reg := o.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
		if !o.NoRuntime {
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		}
	}
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, nil, fmt.Errorf("metrics: prometheus exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), mp, nil
}
