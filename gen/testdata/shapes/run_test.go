package shapes

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dagenhq/dagen/runtime/dagtest"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

func TestShapes(t *testing.T) {
	ctx := context.Background()
	h := dagtest.New(t)
	wf, err := NewSignupWorkflow(h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	at := dagtest.Epoch.Add(48 * time.Hour)
	paid, err := wf.Start(ctx, "t1", Signup{Email: "a@x", Plan: "pro", NudgeAt: at})
	if err != nil {
		t.Fatal(err)
	}
	free, err := wf.Start(ctx, "t2", Signup{Email: "b@x", Plan: "free", NudgeAt: at})
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle(ctx)
	if _, err := paid.Wait(ctx); !errors.Is(err, engine.ErrRunBlocked) {
		t.Fatalf("before the nudge: err = %v, want ErrRunBlocked", err)
	}
	h.Advance(ctx, 48*time.Hour)

	res, err := paid.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if bill, ok := res.Charge.Get(); !ok || bill.Tier != "pro" || res.Summarize != "a@x pays for pro" || res.CreateAccount.ID != "acct-a@x" {
		t.Fatalf("paid: %+v", res)
	}
	res, err = free.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Charge.Ok() || res.Summarize != "b@x pays nothing yet" {
		t.Fatalf("free: %+v", res)
	}

	bad, err := wf.Start(ctx, "t3", Signup{NudgeAt: at})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Wait(ctx)
	var runErr *engine.RunError
	if !errors.As(err, &runErr) || runErr.Status != store.RunFailed || runErr.Failure.Step != "create-account" {
		t.Fatalf("no email: err = %v", err)
	}
	if got := SignupDefinition().Fingerprint(); got != SignupFingerprint {
		t.Fatalf("fingerprint %s, generated %s", got, SignupFingerprint)
	}
}
