package basic

import (
	"context"
	"testing"

	"github.com/dagenhq/dagen/runtime/dagtest"
)

func TestRun(t *testing.T) {
	ctx := context.Background()
	h := dagtest.New(t)
	wf, err := NewGreetingWorkflow(h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	run, err := wf.Start(ctx, "tenant", Greeting{Name: "gopher"})
	if err != nil {
		t.Fatal(err)
	}
	// A handle from the id alone, as a service that stored it gets one.
	res, err := wf.Get(run.ID()).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Upper != "GOPHER" || res.Greet != "hello, GOPHER" {
		t.Fatalf("result = %+v", res)
	}
	if got := GreetingDefinition().Fingerprint(); got != GreetingFingerprint {
		t.Fatalf("fingerprint %s, generated %s", got, GreetingFingerprint)
	}
	if _, err := NewGreetingWorkflow(h.Engine); err == nil {
		t.Fatal("registering twice succeeded")
	}
}
