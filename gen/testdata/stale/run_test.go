package stale

import (
	"context"
	"testing"

	"github.com/dagenhq/dagen/runtime/dagtest"
)

func TestFresh(t *testing.T) {
	h := dagtest.New(t)
	wf, err := NewOrderWorkflow(h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	res, err := wf.Run(context.Background(), "t", Order{Amount: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Check || res.Charge != 3 {
		t.Fatalf("%+v", res)
	}
}
