package twomodels

import (
	"context"
	"testing"

	"github.com/dagenhq/dagen/runtime/dagtest"
)

func TestRun(t *testing.T) {
	h := dagtest.New(t)
	wf, err := NewPurchaseWorkflow(h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	res, err := wf.Run(context.Background(), "t", Purchase{Item: "gopher", Cents: 300})
	if err != nil {
		t.Fatal(err)
	}
	if res.Hand.Item != "gopher" || res.Bill.Cents != 300 || !res.Match {
		t.Fatalf("result = %+v", res)
	}
	if got := PurchaseDefinition().Fingerprint(); got != PurchaseFingerprint {
		t.Fatalf("fingerprint %s, generated %s", got, PurchaseFingerprint)
	}
}
