package unexported

import (
	"context"
	"testing"

	"github.com/dagenhq/dagen/runtime/dagtest"
)

func TestRun(t *testing.T) {
	ctx := context.Background()
	h := dagtest.New(t)
	wf, err := newOrderWorkflow(h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	var res orderResult
	res, err = wf.Run(ctx, "tenant", order{ID: "o-1", Amount: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Validate {
		t.Fatalf("result = %+v", res)
	}
	r, ok := res.Charge.Get()
	if !ok || r.Charged != 5 {
		t.Fatalf("charge = %+v, %v", r, ok)
	}
	if got := orderDefinition().Fingerprint(); got != orderFingerprint {
		t.Fatalf("fingerprint %s, generated %s", got, orderFingerprint)
	}
}
