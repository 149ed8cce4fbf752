// Package multi holds two workflows, an onfailure handler, an unexported
// input type, types from other packages, and package-level names that the
// generated code must step around (engine, input, err).
package multi

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"github.com/dagenhq/dagen/dag"
)

// engine is a package-level name that collides with the engine import.
var engine = "v8"

// input and err collide with the generated locals.
const input, err = 1, 2

// Ping is the first workflow's input.
//
//dag:workflow
type Ping struct {
	Host string
	Fail bool
}

// Resolve looks the host up.
//
//dag:step
func Resolve(ctx context.Context, p Ping) (netip.Addr, error) {
	if p.Fail {
		return netip.Addr{}, dag.Terminal(errors.New("no such host"))
	}
	return netip.MustParseAddr("192.0.2.1"), nil
}

// Measure measures the round trip.
//
//dag:step after=Resolve
func Measure(ctx context.Context, p Ping, addr netip.Addr) (time.Duration, error) {
	return 42 * time.Millisecond, nil
}

// Report alerts when a ping run fails.
//
//dag:onfailure
func Report(ctx context.Context, p Ping, f dag.Failure) error { return nil }

// refund is the second workflow's input; its type is unexported.
//
//dag:workflow
type refund struct {
	Cents int
}

//dag:step
func audit(ctx context.Context, r refund) ([]string, error) {
	return []string{engine}, nil
}

//dag:step after=audit
func pay(ctx context.Context, r refund, lines []string) (map[string]int, error) {
	return map[string]int{lines[0]: r.Cents + input + err}, nil
}
