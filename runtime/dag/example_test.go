package dag_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/dagenhq/dagen/runtime/dag"
)

func ExampleMaybe() {
	shipped := dag.Some("parcel-7")
	rejected := dag.None[string]()
	if s, ok := shipped.Get(); ok {
		fmt.Println("shipped:", s)
	}
	fmt.Println("rejected:", rejected.OrElse("no"))
	// Output:
	// shipped: parcel-7
	// rejected: no
}

func ExampleTerminal() {
	err := dag.Terminal(errors.New("card number invalid"))
	fmt.Println(dag.IsTerminal(err), dag.IsTerminal(fmt.Errorf("charge: %w", err)), err)
	// Output: true true card number invalid
}

func ExampleInfo() {
	id, _ := dag.ParseRunID("0192f0c4-7a3e-7b1c-9d2e-1f2a3b4c5d6e")
	ctx := dag.WithInfo(context.Background(), dag.StepInfo{RunID: id, Step: "Charge", Attempt: 2})
	info, ok := dag.Info(ctx)
	fmt.Println(ok, info.Attempt, info.IdempotencyKey())
	// Output: true 2 0192f0c4-7a3e-7b1c-9d2e-1f2a3b4c5d6e/Charge
}
