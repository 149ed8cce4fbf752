package main

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
)

// The benchmark's workflows: the shapes of dagen's Single, Chain and Fan.
// Every step is a no-op RunAsStep (or dbos.Go) that DBOS checkpoints in
// its operation_outputs table. Each workflow checks the values its steps
// pass along and fails if one is wrong.

// Registered workflow names (dbos.WithWorkflowName), as Enqueue takes them.
const (
	singleName = "single"
	chainName  = "chain10"
	fanName    = "fan50"
)

// Steps per workflow run.
const (
	chainLen   = 10
	fanWidth   = 50
	fanSteps   = fanWidth + 2 // root, the fan, join
	singleStep = 1
)

// probe counts, in this process, the workflow functions that returned
// after their last step and the step functions that ran. It only tells the
// waiter when to start counting finished workflows in the database; the
// counts reported come from there.
var probe struct {
	done      atomic.Int64 // workflows past their last step (single: B's only, see singleWorkflow)
	aDone     atomic.Int64 // fairness: tenant A's single workflows past their step
	stepCalls atomic.Int64 // step functions run
}

func resetProbe() {
	probe.done.Store(0)
	probe.aDone.Store(0)
	probe.stepCalls.Store(0)
}

// step names, fixed so that the names recorded are short and stable.
var (
	chainStepNames = stepNames("s", chainLen)
	fanStepNames   = stepNames("f", fanWidth)
)

func stepNames(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%02d", prefix, i+1)
	}
	return names
}

// registerWorkflows registers every benchmark workflow on a DBOS context.
func registerWorkflows(dctx dbos.Context) {
	dbos.RegisterWorkflow(dctx, singleWorkflow, dbos.WithWorkflowName(singleName))
	dbos.RegisterWorkflow(dctx, chainWorkflow, dbos.WithWorkflowName(chainName))
	dbos.RegisterWorkflow(dctx, fanWorkflow, dbos.WithWorkflowName(fanName))
}

// noopStep is the body of single's step.
func noopStep(context.Context) (int, error) {
	probe.stepCalls.Add(1)
	return 0, nil
}

// singleWorkflow runs one no-op step. Inputs below zero are fairness's
// tenant A and are counted apart.
func singleWorkflow(ctx dbos.Context, n int) (int, error) {
	if _, err := dbos.RunAsStep(ctx, noopStep, dbos.WithStepName("only")); err != nil {
		return 0, err
	}
	if n < 0 {
		probe.aDone.Add(1)
	} else {
		probe.done.Add(1)
	}
	return n, nil
}

// chainWorkflow runs 10 steps in a row, each adding one to the int the
// previous one returned.
func chainWorkflow(ctx dbos.Context, n int) (int, error) {
	v := n
	for i := range chainLen {
		prev := v
		var err error
		v, err = dbos.RunAsStep(ctx, func(context.Context) (int, error) {
			probe.stepCalls.Add(1)
			return prev + 1, nil
		}, dbos.WithStepName(chainStepNames[i]))
		if err != nil {
			return 0, err
		}
	}
	if v != n+chainLen {
		return 0, fmt.Errorf("chain of %d ended with %d, want %d", n, v, n+chainLen)
	}
	probe.done.Add(1)
	return v, nil
}

// fanWorkflow runs a root step, then 50 steps started at once with
// dbos.Go and awaited, then a join step that takes their sum.
func fanWorkflow(ctx dbos.Context, n int) (int, error) {
	root, err := dbos.RunAsStep(ctx, func(context.Context) (int, error) {
		probe.stepCalls.Add(1)
		return n, nil
	}, dbos.WithStepName("root"))
	if err != nil {
		return 0, err
	}
	chans := make([]<-chan dbos.StepOutcome[int], fanWidth)
	for i := range fanWidth {
		chans[i], err = dbos.Go(ctx, func(context.Context) (int, error) {
			probe.stepCalls.Add(1)
			return root + i, nil
		}, dbos.WithStepName(fanStepNames[i]))
		if err != nil {
			return 0, err
		}
	}
	sum := 0
	for i, ch := range chans {
		out := <-ch
		if out.Err != nil {
			return 0, fmt.Errorf("fan step %d: %w", i+1, out.Err)
		}
		sum += out.Result
	}
	total, err := dbos.RunAsStep(ctx, func(context.Context) (int, error) {
		probe.stepCalls.Add(1)
		return sum, nil
	}, dbos.WithStepName("join"))
	if err != nil {
		return 0, err
	}
	if want := fanWidth*n + fanWidth*(fanWidth-1)/2; total != want {
		return 0, fmt.Errorf("fan of %d joined %d, want %d", n, total, want)
	}
	probe.done.Add(1)
	return total, nil
}
