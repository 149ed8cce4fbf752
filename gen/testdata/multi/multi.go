// Package multi holds two workflows, an onfailure handler, an unexported
// input type, types from other packages, a skip predicate that both
// workflows use, and package-level names that the generated code must step
// around (engine, input, err, ResolveFn).
package multi

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
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

// ResolveFn collides with the generated local that holds Resolve.
var ResolveFn = Resolve

// never is a skip predicate of both workflows: its signature is declared
// once.
func never(ctx context.Context) bool { return false }

// Log logs the ping; it returns no value.
//
//dag:step after=Resolve skip=never
func Log(ctx context.Context, p Ping, addr netip.Addr) error { return nil }

// Report alerts when a ping run fails.
//
//dag:onfailure
func Report(ctx context.Context, p Ping, f dag.Failure) error { return nil }

// refund is the second workflow's input; its type is unexported, and so
// is its generated API: newRefundWorkflow, refundResult, …
//
//dag:workflow
type refund struct {
	Cents int
}

//dag:step
func audit(ctx context.Context, r refund) ([]string, error) {
	return []string{engine}, nil
}

//dag:step after=audit skip=never
func note(ctx context.Context, r refund, lines []string) error { return nil }

//dag:step after=audit
func pay(ctx context.Context, r refund, lines []string) (map[string]int, error) {
	return map[string]int{lines[0]: r.Cents + input + err}, nil
}
