package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// Definition is a workflow the engine can run: its steps, their edges and
// what to call. Generated code builds one per workflow; it can also be built
// by hand.
type Definition struct {
	// Name is the stored workflow name. Runs in storage refer to it, so it
	// must stay the same across deploys.
	Name string
	// InputType identifies the workflow input's Go type, as its package
	// path and name ("example.com/shop.Order"). It is part of every task's
	// signature, so runs started with another input type are left to
	// workers built with that one. Generated code sets it; a hand-written
	// definition may leave it empty.
	InputType string
	// Steps in any order; the edges come from each step's Parents.
	Steps []Step
	// OnFailure, if set, is called once when a run fails for good.
	OnFailure func(ctx context.Context, in StepInput, f dag.Failure) error
	// Key, if set, derives a run's idempotency key from its encoded input
	// (key= on the workflow): while a run of the workflow and tenant with
	// that key is retained, a trigger with the same key starts nothing and
	// gets that run. An empty key is no key. A trigger's own key
	// (WithKey) takes its place.
	Key func(input []byte) (string, error)
	// Concurrency, when above zero, admits at most this many runs of the
	// workflow RUNNING at once per concurrency key (concurrency= on the
	// workflow); the others are created QUEUED and admitted in the order
	// they were triggered, each in the transaction that finishes a run of
	// that key. The cap counts runs of every tenant.
	Concurrency int
	// ConcurrencyKey, if set, derives a run's concurrency key from its
	// encoded input (per= on the workflow). Nil puts every run of the
	// workflow under one cap. It is only used with Concurrency.
	ConcurrencyKey func(input []byte) (string, error)
	// Timeout, when above zero, is how long a run may take, counted from
	// its trigger (timeout= on the workflow): at the deadline the run
	// fails with "timed out after …", its running steps' contexts are
	// cancelled and its onfailure handler runs. A trigger's own timeout
	// (WithTimeout) takes its place.
	Timeout time.Duration
	// Schedules are the workflow's declared schedules (//dag:schedule):
	// registering the definition on an engine whose store keeps schedules
	// (store.Scheduler) creates or updates them by name, and deletes the
	// workflow's declared schedules no longer listed.
	Schedules []ScheduleDef
	// Priority is the priority of the workflow's runs (priority= on the
	// workflow), from 0 (the default) to MaxPriority: a run's ready tasks
	// are claimed before the same tenant's tasks of lower priority. It
	// does not change the turns between tenants. A trigger's own
	// priority (WithPriority) takes its place.
	Priority int
	// RateLimits are the rate limits the workflow's steps take tokens
	// from (//dag:ratelimit), by name. A limit of one name must be the
	// same in every definition registered on an engine.
	RateLimits []RateLimit
}

// MaxPriority is the highest run priority.
const MaxPriority = store.MaxPriority

// RateLimit is a token bucket shared by every worker of a store
// (//dag:ratelimit): it holds up to Burst tokens and gains Rate a second;
// a step that names it starts only when it can take its units, and
// waits for them queued, holding no worker. A limit keeps one bucket per
// key (per= on the step).
type RateLimit struct {
	// Name is the stored name of the limit, shared by every workflow that
	// names it.
	Name string
	// Rate is how many tokens the bucket gains a second; above zero.
	Rate float64
	// Burst is how many tokens the bucket holds at most: how many starts
	// may follow each other at once after a quiet while. 0 means one.
	Burst int
}

// StepRateLimit says which rate limit a step takes tokens from
// (ratelimit= on the step).
type StepRateLimit struct {
	// Name names a RateLimit of the definition.
	Name string
	// Units is how many tokens each attempt takes (units= on the step);
	// 0 means one.
	Units int
	// Key, if set, derives the bucket's key from the run's encoded input
	// (per= on the step); nil puts every run under one bucket.
	Key func(input []byte) (string, error)
}

// StepKind says what a step does.
type StepKind int

// Step kinds.
const (
	// KindStep runs Step.Run and stores its output.
	KindStep StepKind = iota
	// KindSleep computes a wake time with Step.Sleep and sleeps until then,
	// durably: no worker holds it while it sleeps.
	KindSleep
	// KindSignal waits for a signal (//dag:signal): once its parents are
	// resolved it waits, durably and holding no worker, until a signal
	// arrives (Engine.Signal), whose payload is then its output, or until
	// SignalTimeout has passed, when it is skipped with "no signal within
	// 72h". It has no func.
	KindSignal
	// KindChild starts a run of another workflow and waits for it
	// (//dag:child): once its parents are resolved, Step.Run builds the
	// child's input; the child run is created with the attempt's result,
	// under the run's tenant, and the step waits, durably and holding no
	// worker, until the child ends. It then completes with the output of
	// the child's result step (Child.Result), is skipped when that step
	// was, and fails for good when the child failed or was cancelled. A
	// run that fails, times out or is cancelled cancels its children.
	KindChild
)

// Child says which workflow a KindChild step runs, as generated code
// names it. The engine that runs the step needs that workflow registered
// too (it builds the child's tasks from its definition): Start says so
// when it is not.
type Child struct {
	// Workflow is the stored name of the child workflow.
	Workflow string
	// InputType is the child workflow's input type (its
	// Definition.InputType): the type Step.Run's output encodes. Part of
	// the step's signature.
	InputType string
	// Result is the stored name of the child workflow's step whose
	// output is the step's output, or empty when the step has none. Its
	// output type (as its children read it) is Step.OutputType.
	Result string
}

// Step is one node of a workflow.
type Step struct {
	// Name is the stored step name, unique in the workflow.
	Name string
	// Kind is KindStep (the default), KindSleep, KindSignal or
	// KindChild.
	Kind StepKind
	// Parents must finish (complete or be skipped) before this step is
	// looked at. Run reads their outputs by name ([ParentOutput]).
	Parents []Parent
	// OutputType identifies the Go type of the step's output as package
	// path and name, or is empty for a step without output (and a sleep).
	// It is part of the signatures of the step and of its children (see
	// [Definition.Signatures]). Generated code sets it.
	OutputType string
	// Skip predicates, evaluated in order once the parents are resolved;
	// the first that returns true skips the step.
	Skip []Predicate
	// Run executes a KindStep step and returns its encoded output (nil for
	// a step without output).
	Run func(ctx context.Context, in StepInput) ([]byte, error)
	// Sleep computes how long a KindSleep step sleeps.
	Sleep func(ctx context.Context, in StepInput) (Wake, error)
	// Retry says how often and how soon a failed attempt is retried.
	Retry RetryPolicy
	// Timeout bounds one attempt; zero means the engine's default.
	Timeout time.Duration
	// Each, when set, maps the step: it names one parent, listed in
	// Parents, whose output is a JSON array (a Go slice), and the step runs
	// once per element of it, each element a task of its own with its own
	// attempts. Run reads the element as that parent's output
	// ([ParentOutput] of the element type), and OutputType is the type one
	// element's run returns; the step's own output, as its children and
	// the run's result see it, is the array of the elements' outputs in
	// element order. Skip predicates and the cascade apply to the step as
	// a whole, before it is mapped, and see the parent's whole array.
	Each string
	// Limit bounds how many elements of one run of a mapped step are in
	// flight (queued, running or waiting out a retry) at once; 0 means no
	// bound.
	Limit int
	// SignalTimeout bounds how long a KindSignal step waits for its
	// signal, counted from when it begins to wait; 0 waits for ever.
	SignalTimeout time.Duration
	// Child names the workflow a KindChild step runs; Run returns the
	// encoded input of its run.
	Child *Child
	// RateLimit, when set, makes each attempt of a KindStep step wait,
	// queued, until it can take its units from the limit's bucket.
	RateLimit *StepRateLimit
}

// Parent is an edge into a step.
type Parent struct {
	Name string
	// Optional parents may be skipped without skipping the child; the child
	// then sees an empty dag.Maybe. A skipped required parent skips the
	// child (cascade).
	Optional bool
}

// Predicate is a named skip condition.
type Predicate struct {
	Name string
	Eval func(ctx context.Context, in StepInput) (bool, error)
}

// Wake is when a sleep step wakes: at At when it is set, otherwise Delay
// after the store's now.
type Wake struct {
	Delay time.Duration
	At    time.Time
}

// RetryPolicy is retry=N backoff=B maxbackoff=M: up to MaxRetries more
// attempts after the first, the k-th retry waiting Backoff*2^(k-1), capped
// at MaxBackoff when that is set.
type RetryPolicy struct {
	MaxRetries int
	Backoff    time.Duration
	MaxBackoff time.Duration
}

// Delay returns how long to wait before retry number k (1 for the first
// retry).
func (p RetryPolicy) Delay(k int) time.Duration {
	if k < 1 {
		k = 1
	}
	d := p.Backoff
	for i := 1; i < k; i++ {
		if p.MaxBackoff > 0 && d >= p.MaxBackoff {
			break
		}
		if d > time.Duration(1<<62) {
			break
		}
		d *= 2
	}
	if p.MaxBackoff > 0 && d > p.MaxBackoff {
		d = p.MaxBackoff
	}
	return d
}

// OnFailureStep is the stored name of a workflow's onfailure task. Step names
// cannot collide with it because they may not start with '@'.
const OnFailureStep = "@onfailure"

// ErrInvalidDefinition is wrapped by every error [Definition.Validate]
// returns.
var ErrInvalidDefinition = errors.New("invalid workflow definition")

// Validate checks that the definition is a well-formed DAG: a name, unique
// non-empty step names, known parents, no self edges or cycles, the
// function each kind needs, and sane retry settings. It reports every
// problem it finds, joined.
func (d *Definition) Validate() error {
	if d == nil {
		return fmt.Errorf("%w: nil definition", ErrInvalidDefinition)
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: workflow %q: %s", ErrInvalidDefinition, d.Name, fmt.Sprintf(format, args...)))
	}
	if d.Name == "" {
		bad("empty workflow name")
	}
	if len(d.Steps) == 0 {
		bad("no steps")
	}
	index := make(map[string]int, len(d.Steps))
	for i, s := range d.Steps {
		switch {
		case s.Name == "":
			bad("step %d has no name", i)
		case strings.HasPrefix(s.Name, "@"):
			bad("step name %q may not start with '@'", s.Name)
		case strings.ContainsAny(s.Name, "[]"):
			bad("step name %q may not contain '[' or ']': they name the elements of mapped steps", s.Name)
		default:
			if _, dup := index[s.Name]; dup {
				bad("duplicate step %q", s.Name)
			}
			index[s.Name] = i
		}
	}
	for _, s := range d.Steps {
		seen := map[string]bool{}
		for _, p := range s.Parents {
			switch {
			case p.Name == s.Name:
				bad("step %q lists itself as a parent", s.Name)
			case seen[p.Name]:
				bad("step %q lists parent %q twice", s.Name, p.Name)
			default:
				if _, ok := index[p.Name]; !ok {
					bad("step %q has unknown parent %q", s.Name, p.Name)
				}
			}
			seen[p.Name] = true
		}
		switch s.Kind {
		case KindStep:
			if s.Run == nil {
				bad("step %q has no Run func", s.Name)
			}
		case KindSleep:
			if s.Sleep == nil {
				bad("sleep step %q has no Sleep func", s.Name)
			}
		case KindSignal:
			if s.Run != nil || s.Sleep != nil || len(s.Skip) > 0 {
				bad("signal step %q has a func or skip predicates: a signal wait runs no code", s.Name)
			}
		case KindChild:
			switch {
			case s.Run == nil:
				bad("child step %q has no Run func: it builds the child run's input", s.Name)
			case s.Child == nil || s.Child.Workflow == "":
				bad("child step %q names no child workflow: set Child.Workflow", s.Name)
			}
		default:
			bad("step %q has unknown kind %d", s.Name, s.Kind)
		}
		if s.Child != nil && s.Kind != KindChild {
			bad("step %q sets Child but is not a KindChild step", s.Name)
		}
		for _, p := range s.Skip {
			if p.Eval == nil {
				bad("step %q: skip predicate %q has no Eval func", s.Name, p.Name)
			}
		}
		if s.Each != "" || s.Limit != 0 {
			validMap(s, bad)
		}
		if s.Retry.MaxRetries < 0 || s.Retry.Backoff < 0 || s.Retry.MaxBackoff < 0 || s.Timeout < 0 || s.SignalTimeout < 0 {
			bad("step %q has negative retry or timeout settings", s.Name)
		}
	}
	switch {
	case d.Concurrency < 0 || d.Concurrency > math.MaxInt32:
		bad("concurrency %d: want 1 to %d runs at once, or 0 for no cap", d.Concurrency, math.MaxInt32)
	case d.Concurrency == 0 && d.ConcurrencyKey != nil:
		bad("a ConcurrencyKey without Concurrency: set Concurrency to the runs allowed at once per key")
	}
	if d.Timeout < 0 {
		bad("negative timeout %s: want a duration above zero, or 0 for no deadline", store.ShortDuration(d.Timeout))
	}
	validSchedules(d.Schedules, bad)
	validFlow(d, bad)
	if len(errs) == 0 {
		if cycle := d.findCycle(index); cycle != nil {
			bad("cycle: %s", strings.Join(cycle, " -> "))
		}
	}
	return errors.Join(errs...)
}

// findCycle returns a cycle as a path of step names in execution order
// that starts and ends at the cycle's first step in definition order, or
// nil. It visits steps in definition order so the answer is deterministic.
func (d *Definition) findCycle(index map[string]int) []string {
	const (
		unvisited = iota
		onPath
		done
	)
	state := make([]int, len(d.Steps))
	var path []int
	var visit func(i int) []string
	visit = func(i int) []string {
		state[i] = onPath
		path = append(path, i)
		for _, p := range d.Steps[i].Parents {
			j := index[p.Name]
			switch state[j] {
			case onPath:
				// path[k:] walks parent edges from j back to j; reverse it
				// to read in execution order, then rotate it to start at
				// the step defined first.
				k := len(path) - 1
				for path[k] != j {
					k--
				}
				nodes := slices.Clone(path[k:])
				slices.Reverse(nodes)
				first := slices.Index(nodes, slices.Min(nodes))
				nodes = append(nodes[first:], nodes[:first]...)
				cycle := make([]string, 0, len(nodes)+1)
				for _, n := range nodes {
					cycle = append(cycle, d.Steps[n].Name)
				}
				return append(cycle, cycle[0])
			case unvisited:
				if c := visit(j); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[i] = done
		return nil
	}
	for i := range d.Steps {
		if state[i] == unvisited {
			if c := visit(i); c != nil {
				return c
			}
		}
	}
	return nil
}

// rescueAttempts is how many attempts sleep and onfailure tasks get: they
// have no retry policy of their own, and a worker lost while running one
// should not fail the run. (A failing onfailure handler is still not
// retried; only a lost worker costs these attempts.)
const rescueAttempts = 3

// newTasks returns the tasks a run of d starts with; sigs are d's
// signatures.
func (d *Definition) newTasks(sigs map[string]string) []store.NewTask {
	tasks := make([]store.NewTask, 0, len(d.Steps)+1)
	for _, s := range d.Steps {
		kind := s.taskKind()
		parents := make([]string, len(s.Parents))
		for i, p := range s.Parents {
			parents[i] = p.Name
		}
		attempts := s.Retry.MaxRetries + 1
		if kind == store.KindSleep || kind == store.KindSignal {
			attempts = max(attempts, rescueAttempts)
		}
		nt := store.NewTask{Name: s.Name, Kind: kind, Parents: parents, MaxAttempts: attempts, Signature: sigs[s.Name]}
		if s.RateLimit != nil {
			nt.RateLimit, nt.RateUnits = s.RateLimit.Name, max(s.RateLimit.Units, 1)
		}
		tasks = append(tasks, nt)
	}
	if d.OnFailure != nil {
		tasks = append(tasks, store.NewTask{Name: OnFailureStep, Kind: store.KindOnFailure, MaxAttempts: rescueAttempts, Signature: sigs[OnFailureStep]})
	}
	return tasks
}

// validMap checks a mapped step's Each and Limit.
func validMap(s Step, bad func(format string, args ...any)) {
	switch {
	case s.Each == "":
		bad("step %q sets Limit without Each: only a mapped step has a limit", s.Name)
	case s.Kind != KindStep && s.Kind != KindChild:
		bad("step %q maps %q but is not a step: only a step or a child step can be mapped", s.Name, s.Each)
	case !slices.ContainsFunc(s.Parents, func(p Parent) bool { return p.Name == s.Each }):
		bad("step %q maps %q, which is not one of its parents", s.Name, s.Each)
	case slices.ContainsFunc(s.Parents, func(p Parent) bool { return p.Name == s.Each && p.Optional }):
		bad("step %q maps %q, which it takes as optional: the parent it maps is required", s.Name, s.Each)
	}
	if s.Limit < 0 {
		bad("step %q has a negative Limit", s.Name)
	}
}

// validFlow checks the definition's priority and rate limits, and the
// steps' uses of them.
func validFlow(d *Definition, bad func(format string, args ...any)) {
	if d.Priority < 0 || d.Priority > MaxPriority {
		bad("priority %d: want 0 (the default) to %d, higher first", d.Priority, MaxPriority)
	}
	limits := make(map[string]RateLimit, len(d.RateLimits))
	for _, l := range d.RateLimits {
		if _, dup := limits[l.Name]; dup {
			bad("rate limit %q is listed twice", l.Name)
		}
		if err := l.store().Validate(); err != nil {
			bad("%v", err)
		}
		limits[l.Name] = l
	}
	for _, s := range d.Steps {
		rl := s.RateLimit
		if rl == nil {
			continue
		}
		l, ok := limits[rl.Name]
		switch {
		case s.Kind != KindStep:
			bad("step %q takes tokens of rate limit %q but is not a KindStep step: only a step that runs code starts under a limit", s.Name, rl.Name)
		case !ok:
			bad("step %q takes tokens of rate limit %q, which Definition.RateLimits does not list", s.Name, rl.Name)
		case rl.Units < 0 || rl.Units > l.store().Burst:
			bad("step %q takes %d units of rate limit %q, whose bucket holds %d: it could never start", s.Name, rl.Units, rl.Name, l.store().Burst)
		}
	}
}

// store returns the limit as the store keeps it: a burst of 0 is one.
func (l RateLimit) store() store.RateLimit {
	return store.RateLimit{Name: l.Name, Rate: l.Rate, Burst: max(l.Burst, 1)}
}
