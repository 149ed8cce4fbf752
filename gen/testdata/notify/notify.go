// Package notify has a workflow whose steps all return only error: its
// result has no fields, and Wait has nothing to decode.
package notify

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
)

// Notice is the workflow input.
//
//dag:workflow
type Notice struct {
	To   string
	Fail bool
}

// Send records the notice in the Outbox of ctx.
//
//dag:step
func Send(ctx context.Context, n Notice) error {
	if n.Fail {
		return dag.Terminal(errors.New("no route to " + n.To))
	}
	return outbox(ctx).add("send " + n.To)
}

// Cooldown waits an hour before the reminder.
//
//dag:sleep after=Send
func Cooldown(ctx context.Context, n Notice) (time.Duration, error) {
	return time.Hour, nil
}

// Remind records a reminder after the cooldown.
//
//dag:step after=Send,Cooldown retry=2 backoff=1s
func Remind(ctx context.Context, n Notice) error {
	return outbox(ctx).add("remind " + n.To)
}

// Alert records the failure.
//
//dag:onfailure
func Alert(ctx context.Context, n Notice, f dag.Failure) error {
	return outbox(ctx).add("alert " + n.To + ": " + f.Step)
}

// Outbox collects what the steps sent.
type Outbox struct {
	mu   sync.Mutex
	sent []string
}

func (o *Outbox) add(s string) error {
	if o == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sent = append(o.sent, s)
	return nil
}

// Sent returns what was sent so far.
func (o *Outbox) Sent() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.sent...)
}

type outboxKey struct{}

// WithOutbox returns a context in which the steps record into o.
func WithOutbox(ctx context.Context, o *Outbox) context.Context {
	return context.WithValue(ctx, outboxKey{}, o)
}

func outbox(ctx context.Context) *Outbox {
	o, _ := ctx.Value(outboxKey{}).(*Outbox)
	return o
}
