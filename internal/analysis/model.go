package analysis

import (
	"go/token"
	"go/types"
	"slices"
	"strings"
	"time"
)

// Package is a package with at least one checked workflow.
type Package struct {
	Path  string // import path
	Name  string // package name
	Dir   string // directory holding the package's files
	Types *types.Package
	// Workflows in source order.
	Workflows []*Workflow
	// RateLimits are the package's //dag:ratelimit constants, in source
	// order, used by a step or not.
	RateLimits []*RateLimit
	// Orphan is set for a package that no longer has any directive but
	// still holds a dag_gen.go that dagen wrote: the file is left from
	// workflows since removed, and is to be deleted. Workflows is empty.
	Orphan bool
}

// Workflow is one //dag:workflow type and the steps that take it as their
// input.
type Workflow struct {
	Name     string // stored name: name= or the type name
	TypeName string // the Go type's name
	Input    types.Type
	Pos      token.Position // the type's name
	// Key is key=, the field of the input that gives a run its
	// idempotency key, or nil.
	Key *Key
	// Concurrency is concurrency=: how many runs of the workflow may be
	// RUNNING at once per concurrency key, or 0 for no cap.
	Concurrency int
	// ConcurrencyKey is per=, the field of the input that gives a run its
	// concurrency key, the runs that Concurrency caps together, or nil:
	// one cap for all the workflow's runs. It is only set with
	// Concurrency.
	ConcurrencyKey *Key
	// Timeout is timeout=: how long a run may take, counted from its
	// trigger, or 0 for no deadline.
	Timeout time.Duration
	// Priority is priority=: the priority of the workflow's runs, from 0
	// (the default) to engine.MaxPriority.
	Priority int
	// Steps in source order: steps, sleeps and signal waits.
	Steps []*Step
	// Schedules are the //dag:schedule funcs that build the workflow's
	// input, in source order.
	Schedules []*Schedule
	// OnFailure is the name of the onfailure func, or "".
	OnFailure    string
	OnFailurePos token.Position
	OnFailureSig *types.Signature
	// Result is the step named by result=, whose output is the
	// workflow's result: what a child step running this workflow
	// completes with. Nil without result=.
	Result *Step
}

// Step returns the step whose Go func is named fn, or nil.
func (w *Workflow) Step(fn string) *Step {
	for _, s := range w.Steps {
		if s.Func == fn {
			return s
		}
	}
	return nil
}

// RateLimits returns the rate limits the workflow's steps take tokens
// from, sorted by name, each once.
func (w *Workflow) RateLimits() []*RateLimit {
	var out []*RateLimit
	for _, s := range w.Steps {
		if s.RateLimit != nil && !slices.Contains(out, s.RateLimit.Limit) {
			out = append(out, s.RateLimit.Limit)
		}
	}
	slices.SortFunc(out, func(x, y *RateLimit) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// RateLimit is a //dag:ratelimit constant: a token bucket, shared by every
// worker, that steps naming it in ratelimit= take tokens from.
type RateLimit struct {
	// Name is the stored name: the constant's string value.
	Name string
	// Const is the Go name of the constant.
	Const string
	// Rate is rate=, in tokens a second.
	Rate float64
	// Burst is burst=, how many tokens the bucket holds at most, or 0
	// for one.
	Burst int
	Pos   token.Position // the constant's name
}

// StepRateLimit is ratelimit= of a step, with units= and per=.
type StepRateLimit struct {
	Limit *RateLimit
	// Units is units=, the tokens each attempt takes, or 0 for one.
	Units int
	// Key is per=, the field of the input whose value keys the bucket
	// (one bucket per value), or nil for one bucket.
	Key *Key
}

// Key is key= or per= of a workflow, or per= of a rate-limited step: a
// field of the input, reached by a dotted path of struct fields, whose
// value in the run's input is the run's idempotency key (key=),
// concurrency key (per= of a workflow) or rate limit key (per= of a
// step, which picks the bucket).
type Key struct {
	// Path is the path as written: "ID", "Customer.ID". Each name is a
	// field, maybe promoted from an embedded struct, so that
	// input.Customer.ID selects it in Go.
	Path string
	Type types.Type // the field's type, of a string or integer kind
	Kind KeyKind
	Pos  token.Position // the value of key= or per=
}

// Fields returns the field names of the path, in order.
func (k *Key) Fields() []string { return strings.Split(k.Path, ".") }

// KeyKind says how a key is written from its field's value.
type KeyKind int

// Key kinds.
const (
	KeyString   KeyKind = iota // a string kind: the value itself
	KeySigned                  // a signed integer kind, in decimal
	KeyUnsigned                // an unsigned integer kind, in decimal
)

// StepKind says whether a step runs code, sleeps or waits for a signal.
type StepKind int

// Step kinds.
const (
	KindStep   StepKind = iota // //dag:step
	KindSleep                  // //dag:sleep
	KindSignal                 // //dag:signal
	KindChild                  // //dag:child
)

// Step is one node of a workflow's graph: a //dag:step or //dag:sleep
// func, or a //dag:signal type, the payload of a signal wait.
//
// A signal wait has no func: Func is then the name its children's after=
// give it, its stored name, and Sig is nil. Its Output is the payload
// type, which its children take like any parent's output.
type Step struct {
	// Func is the Go func's name, or a signal wait's stored name.
	Func string
	Name string // stored name: name= or Func (a signal's: its type's name)
	Kind StepKind
	Pos  token.Position // the func's name, or the signal type's name
	Sig  *types.Signature
	// Output is the type of the value the step produces, or nil for a step
	// returning only error and for sleeps. A signal wait's is its payload
	// type.
	Output types.Type
	// TypeName is the name of a signal wait's payload type, the type
	// //dag:signal is on; "" for other kinds.
	TypeName string
	// SignalTimeout is timeout= of a signal wait: how long it waits for
	// its signal before it is skipped, or 0 to wait for ever.
	SignalTimeout time.Duration
	// signalIdent is a signal wait's [Step.Ident], set once its workflow
	// is known.
	signalIdent string
	// SleepUntil is set for a sleep returning time.Time rather than
	// time.Duration.
	SleepUntil bool
	// Child is the workflow a child step (//dag:child) runs, nil for
	// other kinds. A child step's Output is the child workflow's result
	// as that workflow's own steps read it, or nil when it has no
	// result=.
	Child *Child
	// childIn is the type a child step's func returns, the input of the
	// workflow it runs.
	childIn types.Type
	// childForeignSkippable is set for a child step running a workflow
	// of another package whose result step may be skipped, as far as
	// its directives tell.
	childForeignSkippable bool
	// Parents in after= order.
	Parents []*Edge
	// Skip predicates in skip= order.
	Skip []*Predicate
	// Each is the parent named by each=, one of Parents, for a mapped
	// step: the step runs once per element of that parent's slice, and its
	// parameter for the parent is one element. Nil for a step that is not
	// mapped.
	Each *Edge
	// Limit is limit=: how many elements of one run of a mapped step are
	// in flight at once, or 0 for no bound.
	Limit int
	// RateLimit is ratelimit= of a //dag:step, with units= and per=, or
	// nil.
	RateLimit *StepRateLimit

	MaxRetries int
	Backoff    time.Duration
	MaxBackoff time.Duration
	Timeout    time.Duration

	// Skippable reports whether the step can end SKIPPED: it has skip
	// predicates, a required parent that can be skipped, or only parents
	// that can be skipped.
	Skippable bool

	valid bool // the signature was read; Output is meaningful
}

// Ident returns the Go identifier that names generated for the node are
// built from (its field of the result, the func that returns its
// engine.Step, a signal's Send method): Func for a step or a sleep; for a
// signal wait, its payload type's name, or its stored name when another
// signal wait of the workflow carries the same type.
func (s *Step) Ident() string {
	if s.Kind == KindSignal && s.signalIdent != "" {
		return s.signalIdent
	}
	return s.Func
}

// Mapped reports whether the step runs once per element of a parent's
// slice (each=).
func (s *Step) Mapped() bool { return s.Each != nil }

// ResultType returns the type of the step's value as its children, their
// skip predicates and the run's result see it: Output, or []Output for a
// mapped step, whose value is its elements' outputs in element order. It
// is nil for a step without a value.
func (s *Step) ResultType() types.Type {
	if s.Output == nil || !s.Mapped() {
		return s.Output
	}
	return types.NewSlice(s.Output)
}

// ParamType returns the type the step's parameter for parent edge e has,
// without dag.Maybe: the element type of the parent's slice for the each=
// parent, the parent's [Step.ResultType] for any other. It is nil for a
// parent without a value.
func (s *Step) ParamType(e *Edge) types.Type {
	t := e.Parent.ResultType()
	if e != s.Each || t == nil {
		return t
	}
	if sl, ok := t.Underlying().(*types.Slice); ok {
		return sl.Elem()
	}
	return nil
}

// ValueParents returns the parents that bind a parameter, in order.
func (s *Step) ValueParents() []*Edge {
	var out []*Edge
	for _, e := range s.Parents {
		if e.Param >= 0 {
			out = append(out, e)
		}
	}
	return out
}

// Child is the workflow a child step runs: the //dag:workflow whose input
// type its func returns, in the same package or another one.
type Child struct {
	// Input is the child workflow's input type, the func's first result.
	Input types.Type
	// Workflow is the child workflow's stored name.
	Workflow string
	// TypeName is the name of the child's input type, for messages.
	TypeName string
	// Result is the stored name of the child workflow's result= step, or
	// "" when it has none.
	Result string
	// Local is the child workflow when it is in the step's package, else
	// nil.
	Local *Workflow
}

// Schedule is one //dag:schedule func: it builds the input of the run of
// its workflow that starts at each slot of Cron.
type Schedule struct {
	Func string // the Go func's name
	Name string // stored name: name= or Func, unique in the workflow
	Pos  token.Position
	Sig  *types.Signature
	// Cron is cron=, a five-field expression or a descriptor (@daily),
	// read in Zone.
	Cron string
	// Zone is zone=, an IANA time zone name, or "" for UTC.
	Zone string
	// Tenant is tenant=, the tenant of the runs, or "" for the engine's
	// default.
	Tenant string
	// Catchup is catchup=: latest, all or none, or "" for the engine's
	// default (latest).
	Catchup string
}

// Edge is a parent of a step.
type Edge struct {
	Parent *Step
	// Optional is set when the step takes the parent's output as
	// dag.Maybe[T]: the step runs even when the parent was skipped.
	Optional bool
	// Param is the index, in the step's signature, of the parameter the
	// parent's output binds, or -1 when the parent produces no value.
	Param int
	Pos   token.Position // the name in after=
}

// Predicate is a skip= func.
type Predicate struct {
	Func        string
	Sig         *types.Signature
	ReturnsErr  bool // returns (bool, error) rather than bool
	Args        []PredicateArg
	Pos         token.Position // the name in skip=
	DeclaredPos token.Position
}

// ArgSource says where a predicate argument comes from.
type ArgSource int

// Argument sources.
const (
	ArgContext ArgSource = iota // the step's context
	ArgInput                    // the workflow input
	ArgParent                   // a required parent's output
)

// PredicateArg is what one predicate parameter is given.
type PredicateArg struct {
	Source ArgSource
	// Parent is the index in Step.Parents for ArgParent.
	Parent int
	Type   types.Type
}
