package onfailure

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
)

// TestOnFailureWithUndecodableInput stores inputs that do not decode into
// Order, as after a deploy that changed the input type incompatibly. The
// step fails on the input, and the onfailure handler still runs, once,
// with the zero Order and a failure that says why.
func TestOnFailureWithUndecodableInput(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input any
		why   string
	}{
		// A JSON string where an object is expected.
		{"string", "o-1", "cannot unmarshal string into Go value of type onfailure.Order"},
		// ID decodes and Amount does not: the handler gets the zero
		// Order, not one with ID set.
		{"field", map[string]any{"ID": "o-2", "Amount": "lots"}, "cannot unmarshal string into Go struct field Order.Amount of type int"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alerts := &Alerts{}
			ctx := WithAlerts(context.Background(), alerts)
			e, err := engine.New(memstore.New(nil), &engine.Config{Manual: true, WorkerID: "onfailure-test"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := NewOrderWorkflow(e); err != nil {
				t.Fatal(err)
			}
			// Through the engine with the stored name: the typed Start
			// would not take a value of another type.
			id, err := e.Trigger(ctx, "Order", "t", tc.input)
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Wait(ctx, id)
			var runErr *engine.RunError
			if !errors.As(err, &runErr) || runErr.Status != store.RunFailed || runErr.Failure.Step != "Charge" ||
				!strings.Contains(runErr.Failure.Message, tc.why) || runErr.Failure.InputError != "" {
				t.Fatalf("wait: %v", err)
			}
			for {
				n, err := e.Poll(ctx) // the onfailure task runs after the run has failed
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
			}
			res, err := e.Result(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Tasks[engine.OnFailureStep].Status; got != store.TaskCompleted {
				t.Fatalf("onfailure task is %s", got)
			}

			calls := alerts.Calls()
			if len(calls) != 1 {
				t.Fatalf("Alert ran %d times, want once: %+v", len(calls), calls)
			}
			c := calls[0]
			if c.Input != (Order{}) {
				t.Errorf("Alert got input %+v, want the zero Order", c.Input)
			}
			f := c.Failure
			if f.RunID != id || f.Step != "Charge" || f.Attempt != 1 || !strings.Contains(f.Message, tc.why) {
				t.Errorf("failure = %+v", f)
			}
			if !strings.HasPrefix(f.InputError, "decode workflow input as onfailure.Order: ") || !strings.Contains(f.InputError, tc.why) {
				t.Errorf("InputError = %q", f.InputError)
			}
			if msg := f.Error(); !strings.Contains(msg, "the run input did not decode, the handler got the zero input: "+f.InputError) {
				t.Errorf("Error() = %q", msg)
			}
		})
	}
}

// TestOnFailureWithInput checks that a run whose input decodes gets it,
// and no InputError.
func TestOnFailureWithInput(t *testing.T) {
	alerts := &Alerts{}
	ctx := WithAlerts(context.Background(), alerts)
	e, err := engine.New(memstore.New(nil), &engine.Config{Manual: true, WorkerID: "onfailure-test"})
	if err != nil {
		t.Fatal(err)
	}
	wf, err := NewOrderWorkflow(e)
	if err != nil {
		t.Fatal(err)
	}
	in := Order{ID: "o-3", Amount: 5}
	if _, err := wf.Run(ctx, "t", in); !errors.Is(err, engine.ErrRunFailed) {
		t.Fatalf("run: %v", err)
	}
	for {
		n, err := e.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	calls := alerts.Calls()
	if len(calls) != 1 || calls[0].Input != in || calls[0].Failure.InputError != "" || calls[0].Failure.Message != "declined" {
		t.Fatalf("calls = %+v", calls)
	}
}
