package multi

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dagenhq/dagen/runtime/dagtest"
	enginepkg "github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

func TestMulti(t *testing.T) {
	ctx := context.Background()
	h := dagtest.New(t)
	ping, err := NewPingWorkflow(h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := newRefundWorkflow(h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ping.Run(ctx, "t", Ping{Host: "example"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Resolve.String() != "192.0.2.1" || res.Measure != 42*time.Millisecond {
		t.Fatalf("ping: %+v", res)
	}
	run, err := ping.Start(ctx, "t", Ping{Fail: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Wait(ctx); !errors.Is(err, enginepkg.ErrRunFailed) {
		t.Fatalf("failing ping: err = %v", err)
	}
	h.RunUntilIdle(ctx) // the onfailure task runs after the run has failed
	full, err := h.Engine.Result(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if got := full.Tasks[enginepkg.OnFailureStep].Status; got != store.TaskCompleted {
		t.Fatalf("onfailure task is %s", got)
	}
	r, err := ref.Run(ctx, "t", refund{Cents: 7})
	if err != nil {
		t.Fatal(err)
	}
	if r.Pay["v8"] != 10 || r.Audit[0] != "v8" {
		t.Fatalf("refund: %+v", r)
	}
}
