package engine_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store/memstore"
)

// A definition wired by hand, the way dagen's generated code wires it:
// adapters decode the input and parent outputs, call the step and encode
// its output.
func Example() {
	ctx := context.Background()
	def := &engine.Definition{
		Name: "greet",
		Steps: []engine.Step{
			{Name: "Upper", Run: func(_ context.Context, in engine.StepInput) ([]byte, error) {
				name, err := engine.Input[string](in)
				if err != nil {
					return nil, err
				}
				return engine.Encode(strings.ToUpper(name))
			}},
			{Name: "Greet", Parents: []engine.Parent{{Name: "Upper"}}, Run: func(_ context.Context, in engine.StepInput) ([]byte, error) {
				upper, err := engine.ParentOutput[string](in, "Upper")
				if err != nil {
					return nil, err
				}
				return engine.Encode("hello, " + upper)
			}},
		},
	}

	e, err := engine.New(memstore.New(nil), &engine.Config{PollInterval: 10 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	if err := e.Register(def); err != nil {
		panic(err)
	}
	if err := e.Start(ctx); err != nil {
		panic(err)
	}
	defer e.Stop(ctx)

	res, err := e.Run(ctx, "greet", "tenant-1", "gopher")
	if err != nil {
		panic(err)
	}
	greeting, err := engine.Output[string](res, "Greet")
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, greeting)
	// Output: COMPLETED hello, GOPHER
}

func ExampleRetryPolicy_Delay() {
	p := engine.RetryPolicy{MaxRetries: 5, Backoff: time.Second, MaxBackoff: 5 * time.Second}
	for k := 1; k <= p.MaxRetries; k++ {
		fmt.Print(p.Delay(k), " ")
	}
	fmt.Println()
	// Output: 1s 2s 4s 5s 5s
}
