package notify

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/dagenhq/dagen/runtime/dagtest"
	"github.com/dagenhq/dagen/runtime/engine"
)

func TestRun(t *testing.T) {
	o := &Outbox{}
	ctx := WithOutbox(context.Background(), o)
	h := dagtest.New(t)
	wf, err := NewNoticeWorkflow(h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	run, err := wf.Start(ctx, "t", Notice{To: "gopher"})
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle(ctx)
	if _, err := run.Wait(ctx); !errors.Is(err, engine.ErrRunBlocked) {
		t.Fatalf("before the cooldown: err = %v, want ErrRunBlocked", err)
	}
	h.Advance(ctx, time.Hour)
	if _, err := run.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := o.Sent(), []string{"send gopher", "remind gopher"}; !slices.Equal(got, want) {
		t.Fatalf("sent %q, want %q", got, want)
	}

	failed, err := wf.Start(ctx, "t", Notice{To: "nowhere", Fail: true})
	if err != nil {
		t.Fatal(err)
	}
	var runErr *engine.RunError
	if _, err := failed.Wait(ctx); !errors.As(err, &runErr) || runErr.Failure.Step != "Send" {
		t.Fatalf("failing notice: err = %v", err)
	}
	h.RunUntilIdle(ctx)
	if got := o.Sent(); got[len(got)-1] != "alert nowhere: Send" {
		t.Fatalf("sent %q, want the alert last", got)
	}
	if got := NoticeDefinition().Fingerprint(); got != NoticeFingerprint {
		t.Fatalf("fingerprint %s, generated %s", got, NoticeFingerprint)
	}
}
