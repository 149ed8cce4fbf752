package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// StepInput is what a step's adapter gets: the encoded run input and the
// results of its parents, which it reads by name. Both may be shared with
// other steps of the run (a fan-out's children get one Parents slice):
// read them, never modify them.
type StepInput struct {
	Info    dag.StepInfo
	Input   []byte
	Parents []store.ParentResult
}

// Encode encodes a step output or workflow input. Values are stored as
// JSON.
func Encode(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, dag.Terminal(fmt.Errorf("encode %T: %w", v, err))
	}
	return b, nil
}

// decode decodes b into a T, naming what it decodes in the error. A decode
// error is terminal: retrying cannot make stored bytes decode.
func decode[T any](b []byte, what string) (T, error) {
	var v T
	if len(b) == 0 {
		return v, dag.Terminal(fmt.Errorf("decode %s as %T: no value stored", what, v))
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, dag.Terminal(fmt.Errorf("decode %s as %T: %w", what, v, err))
	}
	return v, nil
}

// Input decodes the workflow input.
func Input[T any](in StepInput) (T, error) {
	return decode[T](in.Input, "workflow input")
}

// parent returns the result of the parent named name, which the task must
// have. A parent is found by its stored name, never by position, so a
// step reads what that parent produced whatever the order of after= in
// the code that created the run.
func (in StepInput) parent(name string) (store.ParentResult, error) {
	for _, p := range in.Parents {
		if p.Step == name {
			return p, nil
		}
	}
	return store.ParentResult{}, dag.Terminal(fmt.Errorf("step %s reads parent %s, which this task of run %s does not have: the run was created by code with another DAG", in.Info.Step, name, in.Info.RunID))
}

// ParentOutput decodes the output of the parent with stored name name,
// which must have completed.
func ParentOutput[T any](in StepInput, name string) (T, error) {
	var zero T
	p, err := in.parent(name)
	if err != nil {
		return zero, err
	}
	if p.Status != store.TaskCompleted {
		return zero, dag.Terminal(fmt.Errorf("parent %s of step %s is %s, not COMPLETED", p.Step, in.Info.Step, p.Status))
	}
	return decode[T](p.Output, "output of "+p.Step)
}

// ParentMaybe decodes the output of the parent with stored name name, or
// returns an empty Maybe when that parent was skipped.
func ParentMaybe[T any](in StepInput, name string) (dag.Maybe[T], error) {
	p, err := in.parent(name)
	if err != nil {
		return dag.None[T](), err
	}
	if p.Status == store.TaskSkipped {
		return dag.None[T](), nil
	}
	v, err := ParentOutput[T](in, name)
	if err != nil {
		return dag.None[T](), err
	}
	return dag.Some(v), nil
}

// StepRun returns the Run of a step whose func takes the workflow's input
// alone and returns only an error. The generated wiring of such a step
// calls it rather than writing a closure of its own: a workflow of
// thousands of steps then compiles one adapter per signature, not one
// per step (see docs/performance.md, "One adapter per step signature").
// It is kept from inlining: every inlined copy would compile the closure
// again.
//
//go:noinline
func StepRun[In any](fn func(context.Context, In) error) func(context.Context, StepInput) ([]byte, error) {
	return func(ctx context.Context, in StepInput) ([]byte, error) {
		input, err := Input[In](in)
		if err != nil {
			return nil, err
		}
		return nil, fn(ctx, input)
	}
}

// StepRunOutput is [StepRun] for a step func that returns an output,
// which the Run encodes.
//
//go:noinline
func StepRunOutput[In, Out any](fn func(context.Context, In) (Out, error)) func(context.Context, StepInput) ([]byte, error) {
	return func(ctx context.Context, in StepInput) ([]byte, error) {
		input, err := Input[In](in)
		if err != nil {
			return nil, err
		}
		out, err := fn(ctx, input)
		if err != nil {
			return nil, err
		}
		return Encode(out)
	}
}
