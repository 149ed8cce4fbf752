package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine/internal/meters"
	"github.com/dagenhq/dagen/runtime/engine/internal/outage"
	"github.com/dagenhq/dagen/runtime/engine/internal/tracing"
	"github.com/dagenhq/dagen/runtime/engine/internal/worker"
	"github.com/dagenhq/dagen/runtime/store"
)

// Config configures an Engine. The zero value gives sensible defaults.
type Config struct {
	// WorkerID names this worker in storage. Default: host-pid-random.
	WorkerID string
	// Concurrency bounds how many tasks the worker holds at once: steps
	// executing, and steps finished whose results are not stored yet.
	// One slot in 64 is kept for tenants that hold at most one task here,
	// so that a run of a quiet tenant starts at once behind another
	// tenant's backlog: claims fill the others, and a trigger of a tenant
	// that holds none may take a kept one.
	// Default 100.
	Concurrency int
	// BatchSize bounds how many tasks one claim or one completion carries.
	// Default: Concurrency.
	BatchSize int
	// PollInterval is how often a worker looks for work and fires due
	// timers while it finds some. Default 50ms.
	PollInterval time.Duration
	// IdlePollInterval is how long, at most, a worker that finds no work
	// waits between polls: the wait doubles from PollInterval while polls
	// come back empty, and a notification of new work (LISTEN on
	// Postgres), a trigger on this engine or a finished step wakes it at
	// once. It bounds how late an idle worker that has no notifications
	// (behind PgBouncer without a session URL) starts new work; an idle
	// worker also looks for timers that other processes wrote every ten
	// such polls. Default 1s.
	IdlePollInterval time.Duration
	// Lease is how long a claimed task stays with this worker without a
	// heartbeat before another may rescue it; it is also the TTL of the
	// worker's heartbeat (store.Workers). Default 30s.
	Lease time.Duration
	// HeartbeatInterval is how often the worker proves it is alive, and how
	// often the leader looks for tasks to rescue. Default Lease/3.
	HeartbeatInterval time.Duration
	// Retention is how long finished runs are kept before the leader prunes
	// them. Default 7 days; negative keeps them forever.
	Retention time.Duration
	// DisableNotify ignores the store's notifications (LISTEN/NOTIFY on
	// Postgres), of ready work and of cancelled runs, and relies on
	// polling and heartbeats alone.
	DisableNotify bool
	// DisableEagerStart sends every new run's first steps through the
	// ready queue. By default, a run triggered on a started engine with
	// free slots starts its first root on this worker in the transaction
	// that creates it, when its tenant has no backlog (store.Starter),
	// which saves the wait for a poll and a claim's round trip.
	DisableEagerStart bool
	// DisableEagerContinue sends every step after a run's first through
	// the ready queue. By default, the unit that stores a batch of results
	// also claims, for this worker's slots those results free, the steps
	// they made ready, when the fair queue would not hand other tenants'
	// work out first (store.Continuer): a chain's next step then costs no
	// enqueue, no claim and no wait for a poll. Poll runs such steps on
	// in the same call.
	DisableEagerContinue bool
	// StepTimeout bounds an attempt of a step that sets no timeout of its
	// own. Zero means no bound.
	StepTimeout time.Duration
	// Logger receives the engine's log. Default slog.Default().
	Logger *slog.Logger
	// MaxElements bounds how many elements a mapped step (each=) may have
	// in one run: a step whose output a mapped step maps fails, for good,
	// when its slice is longer. Default 100,000.
	MaxElements int
	// SchedulePollInterval is how often the leading worker looks for due
	// schedules (store.Scheduler); the others look every
	// HeartbeatInterval, in case the lead is changing hands. Default 1s.
	SchedulePollInterval time.Duration
	// MaxPayload caps, in bytes, the encoding of a run's input, of a
	// step's output and of a signal's payload: a trigger or a signal over
	// it is refused with ErrPayloadTooLarge, and a step whose output is
	// over it fails for good, with nothing of the output stored. Each
	// claim carries its run's input and its parents' outputs to a worker,
	// so large data belongs elsewhere (an object store), with its key in
	// the payload. Default DefaultMaxPayload (16 MiB); -1 for no cap.
	MaxPayload int
	// MeterProvider receives the engine's metrics (see docs/operating.md,
	// "Metrics"): runs, step attempts and their durations, claims and
	// completions, store errors, schedule lag, and, while this engine
	// leads, the fleet's backlog. Nil means otel.GetMeterProvider(), a
	// no-op unless the program sets one.
	MeterProvider metric.MeterProvider
	// TracerProvider receives the engine's spans (see docs/operating.md,
	// "Traces"): one for each step attempt, a child of the span the run
	// was triggered under, on whichever worker runs it; a step's ctx
	// carries its attempt's span. A run triggered under no span is not
	// traced. Nil means otel.GetTracerProvider(), a no-op unless the
	// program sets one.
	TracerProvider trace.TracerProvider
	// MetricsTopTenants is how many tenants, the busiest, the backlog
	// gauges name; the others are summed as tenant "other". Default 10.
	MetricsTopTenants int
	// Manual makes an engine without background goroutines: Start is an
	// error, Poll does the work and Wait drives Poll itself. For
	// deterministic tests; see package dagtest.
	Manual bool
}

func (c *Config) withDefaults() Config {
	var cfg Config
	if c != nil {
		cfg = *c
	}
	if cfg.WorkerID == "" {
		host, _ := os.Hostname()
		var b [3]byte
		_, _ = rand.Read(b[:])
		cfg.WorkerID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 100
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = cfg.Concurrency
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 50 * time.Millisecond
	}
	if cfg.IdlePollInterval <= 0 {
		cfg.IdlePollInterval = time.Second
	}
	if cfg.SchedulePollInterval <= 0 {
		cfg.SchedulePollInterval = time.Second
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = cfg.Lease / 3
	}
	if cfg.Retention == 0 {
		cfg.Retention = 7 * 24 * time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxElements <= 0 {
		cfg.MaxElements = DefaultMaxElements
	}
	if cfg.MeterProvider == nil {
		cfg.MeterProvider = otel.GetMeterProvider()
	}
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = otel.GetTracerProvider()
	}
	if cfg.MetricsTopTenants <= 0 {
		cfg.MetricsTopTenants = meters.DefaultTopTenants
	}
	if cfg.MaxPayload == 0 {
		cfg.MaxPayload = DefaultMaxPayload
	}
	return cfg
}

// Errors callers branch on.
var (
	ErrUnknownWorkflow   = errors.New("unknown workflow")
	ErrDuplicateWorkflow = errors.New("workflow already registered")
	ErrNilInput          = errors.New("nil workflow input")
	ErrRunFailed         = errors.New("run failed")
	ErrRunCancelled      = errors.New("run cancelled")
	ErrRunBlocked        = errors.New("run blocked: nothing is ready until a timer fires")
	ErrNotStarted        = errors.New("engine not started")
	ErrAlreadyStarted    = errors.New("engine already started")
	ErrManual            = errors.New("engine is manual: drive it with Poll")
	ErrNoOutput          = errors.New("step has no output")
	// ErrInvalidTenant is store.ErrInvalidTenant: a trigger's tenant is
	// not valid (see store.ValidTenant).
	ErrInvalidTenant = store.ErrInvalidTenant
)

// RunError is returned by Wait and Run when a run ends FAILED or CANCELLED.
// It matches ErrRunFailed or ErrRunCancelled with errors.Is.
type RunError struct {
	RunID   dag.RunID
	Status  store.RunStatus
	Failure *dag.Failure // set when FAILED
}

// Error reports the run, its status and, for a FAILED run, which step
// failed on which attempt and why.
func (e *RunError) Error() string {
	if e.Failure != nil {
		return fmt.Sprintf("run %s %s: %v", e.RunID, e.Status, *e.Failure)
	}
	return fmt.Sprintf("run %s %s", e.RunID, e.Status)
}

// Is matches ErrRunFailed or ErrRunCancelled by status.
func (e *RunError) Is(target error) bool {
	return (target == ErrRunFailed && e.Status == store.RunFailed) ||
		(target == ErrRunCancelled && e.Status == store.RunCancelled)
}

// RunResult is a finished (or, from Result, possibly unfinished) run with
// its tasks.
type RunResult struct {
	ID       dag.RunID
	Workflow string
	Tenant   string
	Status   store.RunStatus
	Failure  *dag.Failure
	Tasks    map[string]store.Task
	// Waiting lists, in a result from Result, the QUEUED tasks of an
	// unfinished run that no live worker serves: the code that could run
	// them is not deployed (see WaitingMessage). Only stores that
	// implement store.Deploys tell.
	Waiting []Waiting
}

// Output decodes the output of a COMPLETED step of a run.
func Output[T any](res *RunResult, step string) (T, error) {
	var zero T
	if res == nil {
		return zero, fmt.Errorf("output of %s: nil result", step)
	}
	t, ok := res.Tasks[step]
	if !ok {
		return zero, fmt.Errorf("output of %s: run %s has no such step: %w", step, res.ID, ErrNoOutput)
	}
	if t.Status != store.TaskCompleted {
		return zero, fmt.Errorf("output of %s: step is %s: %w", step, t.Status, ErrNoOutput)
	}
	v, err := decode[T](t.Output, "output of "+step)
	if err != nil {
		return zero, errors.Unwrap(err) // not a step error: drop the Terminal marker
	}
	return v, nil
}

// OutputMaybe decodes the output of a step, or returns an empty Maybe when
// the step did not complete (it was skipped, or the run ended first).
func OutputMaybe[T any](res *RunResult, step string) (dag.Maybe[T], error) {
	if res == nil {
		return dag.None[T](), fmt.Errorf("output of %s: nil result", step)
	}
	if t, ok := res.Tasks[step]; !ok || t.Status != store.TaskCompleted {
		return dag.None[T](), nil
	}
	v, err := Output[T](res, step)
	if err != nil {
		return dag.None[T](), err
	}
	return dag.Some(v), nil
}

// Engine registers workflows, triggers runs and works their tasks. Create
// one with New; it is safe for concurrent use.
type Engine struct {
	store   store.Store
	elector store.Elector // the store's leader election, or nil: every worker leads
	cfg     Config
	log     *slog.Logger
	health  *outage.Health // logs store outages once per change
	meters  *meters.Meters
	tracer  *tracing.Tracer
	inputs  *inputCache // large run inputs, sent once to this worker

	mu         sync.RWMutex
	defs       map[string]*registered
	signatures []string // the task signatures of the registered workflows, sorted, for claims
	// extra is, by signature, the slots a task of that signature takes
	// beyond its own in a claim (store.ClaimParams.Extra): its step's
	// children that have no other parent, less the one its own slot
	// takes. Replaced, never changed: claims use it unlocked.
	extra map[string]int

	waitMu  sync.Mutex
	waiters map[dag.RunID][]*waiter
	// waitRegistered, when set (by tests), is called by Wait right after
	// it registers a waiter: a Wait descheduled there.
	waitRegistered func(dag.RunID)

	runMu sync.Mutex
	runs  map[dag.RunID]*runScope // runs with steps executing here

	loopMu   sync.Mutex
	worker   *worker.Worker // nil unless started
	stopping bool
	// published is what the worker last told the store it serves
	// (store.Deploys), nil before; only the worker's keeper, or Start
	// before it, touches it.
	published *[]string

	leading atomic.Bool // whether this worker does housekeeping now
}

// Leading reports whether this started engine currently leads, that is
// does the housekeeping (rescuing tasks of lost workers, pruning history).
// Stores that do not elect a leader make every worker lead.
func (e *Engine) Leading() bool { return e.leading.Load() }

// registered is a definition with its steps indexed by name.
type registered struct {
	def   *Definition
	steps map[string]*Step
	fp    string
	tasks []store.NewTask
	sigs  map[string]string // task signatures by stored task name
	// served are the signatures this definition serves: its tasks', and
	// the legacy signature of runs created before signatures existed
	// with the same shape.
	served []string
	infos  []store.SignatureInfo
	// mappedBy lists, by parent, the steps that map its output (each=).
	mappedBy map[string][]string
	// children counts, by step, the steps that list it as a parent.
	children map[string]int
	// more counts, by step, the steps its result surely makes ready
	// beyond the one its own slot takes, which the completion that
	// stores it may start here: its children with no other parent, not
	// mapped, taking no rate limit's tokens, less one.
	more map[string]int
	// recorded is set once the signatures' descriptions are in the store
	// (store.Deploys).
	recorded atomic.Bool
	// scheduled is set once its declared schedules are in the store
	// (store.Scheduler).
	scheduled atomic.Bool
}

// runScope lets Cancel reach the steps of a run executing here.
type runScope struct {
	ctx    context.Context
	cancel context.CancelFunc
	refs   int
}

// New returns an engine over st. cfg may be nil.
func New(st store.Store, cfg *Config) (*Engine, error) {
	if st == nil {
		return nil, errors.New("engine: nil store")
	}
	c := cfg.withDefaults()
	el, _ := st.(store.Elector) // the one optional part of a store
	m, err := meters.New(c.MeterProvider)
	if err != nil {
		return nil, fmt.Errorf("engine: metrics: %w", err)
	}
	e := &Engine{
		store:   st,
		elector: el,
		cfg:     c,
		log:     c.Logger,
		health:  outage.NewHealth(c.Logger, c.WorkerID),
		tracer:  tracing.New(c.TracerProvider),
		meters:  m,
		inputs:  newInputCache(),
		defs:    make(map[string]*registered),
		waiters: make(map[dag.RunID][]*waiter),
		runs:    make(map[dag.RunID]*runScope),
	}
	e.health.Observe = m.StoreError
	// The leader reports the fleet's backlog: one store read per
	// collection, whatever the number of workers. The registration lives
	// as long as the provider; an engine that is not leading observes
	// nothing.
	if _, err := meters.ObserveBacklog(c.MeterProvider, meters.BacklogConfig{
		Read: st.Backlog, Observe: e.leading.Load, TopTenants: c.MetricsTopTenants,
		Failed: func(err error) { e.log.Debug("dagen: metrics: read the backlog", "worker", c.WorkerID, "err", err) },
	}); err != nil {
		return nil, fmt.Errorf("engine: metrics: %w", err)
	}
	return e, nil
}

// Store returns the engine's store.
func (e *Engine) Store() store.Store { return e.store }

// WorkerID returns the id this engine claims tasks under.
func (e *Engine) WorkerID() string { return e.cfg.WorkerID }

// Register validates def and makes its workflow runnable on this engine.
// Register workflows before Start: a running worker claims only the
// workflows it knew when it last polled.
func (e *Engine) Register(def *Definition) error {
	if err := def.Validate(); err != nil {
		return err
	}
	reg := &registered{def: def, steps: make(map[string]*Step, len(def.Steps)), fp: def.Fingerprint(), infos: def.SignatureInfos(),
		children: make(map[string]int), more: make(map[string]int)}
	reg.sigs = make(map[string]string, len(reg.infos))
	for _, si := range reg.infos {
		reg.sigs[si.Step] = si.Signature
	}
	reg.served = def.ServedSignatures()
	reg.tasks = def.newTasks(reg.sigs)
	sole := make(map[string]int) // by step: its children with no other parent
	for i := range def.Steps {
		s := &def.Steps[i]
		reg.steps[s.Name] = s
		for _, p := range s.Parents {
			reg.children[p.Name]++
		}
		if len(s.Parents) == 1 && s.Each == "" && s.RateLimit == nil {
			sole[s.Parents[0].Name]++
		}
		if s.Each != "" {
			if reg.mappedBy == nil {
				reg.mappedBy = make(map[string][]string)
			}
			reg.mappedBy[s.Each] = append(reg.mappedBy[s.Each], s.Name)
		}
	}
	for step, n := range sole {
		if n > 1 {
			reg.more[step] = n - 1
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, dup := e.defs[def.Name]; dup {
		return fmt.Errorf("register %q: %w", def.Name, ErrDuplicateWorkflow)
	}
	for _, l := range def.RateLimits {
		for _, other := range e.defs {
			for _, o := range other.def.RateLimits {
				if o.Name == l.Name && o.store() != l.store() {
					return fmt.Errorf("register %q: %w: rate limit %q is %v a second (burst %d) here and %v a second (burst %d) in workflow %q: one limit has one rate; declare it once",
						def.Name, ErrInvalidDefinition, l.Name, l.Rate, l.store().Burst, o.Rate, o.store().Burst, other.def.Name)
				}
			}
		}
	}
	e.defs[def.Name] = reg
	// A new slice: one that servedSignatures handed out may be in use.
	sigs := append(slices.Clone(e.signatures), reg.served...)
	slices.Sort(sigs)
	e.signatures = slices.Compact(sigs)
	extra := maps.Clone(e.extra)
	for step, n := range reg.more {
		// A mapped step's elements share its signature, and one element
		// seldom ends it: claims keep no slots for its children.
		if sig, ok := reg.sigs[step]; ok && reg.steps[step].Each == "" {
			if extra == nil {
				extra = make(map[string]int)
			}
			extra[sig] = max(extra[sig], n)
		}
	}
	e.extra = extra
	return nil
}

func (e *Engine) lookup(workflow string) *registered {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.defs[workflow]
}

// servedSignatures returns the task signatures of the registered
// workflows, sorted: what this worker claims. The slice is never changed
// afterwards: callers may use it unlocked.
func (e *Engine) servedSignatures() []string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.signatures
}

// TriggerRequest is one run to start with TriggerMany.
type TriggerRequest struct {
	Workflow string
	// Tenant is who the run is for: the fair queue serves tenants in
	// turn. It is 1 to store.MaxTenantLen (200) bytes of UTF-8 text
	// without control characters or white space at either end (see
	// store.ValidTenant): it is a key of indexed columns and appears in
	// logs.
	Tenant string
	Input  any
	// Key, when set, is the run's idempotency key: while a run of the
	// workflow and tenant with this key is retained, the request starts
	// nothing and gets that run. Empty means the key the definition
	// derives from the input (Definition.Key), if any.
	Key string
	// Timeout, when above zero, is how long the run may take from now; 0
	// means the definition's Timeout, if any.
	Timeout time.Duration
	// Priority, when above zero, is the run's priority, in place of the
	// definition's (see Definition.Priority); at most MaxPriority.
	Priority int
}

// Triggered is what a trigger came to: the run it started, or, when its
// idempotency key was taken, the run that has it.
type Triggered struct {
	ID dag.RunID
	// Duplicate is set when the key was taken: no run was started, and
	// ID is the run that has the key.
	Duplicate bool
}

// TriggerOption sets an option of one trigger.
type TriggerOption func(*TriggerRequest)

// WithKey sets the run's idempotency key, in place of the one its
// definition derives from the input (see TriggerRequest.Key).
func WithKey(key string) TriggerOption {
	return func(r *TriggerRequest) { r.Key = key }
}

// WithTimeout sets how long the run may take, counted from the trigger,
// in place of the definition's Timeout (see Definition.Timeout).
func WithTimeout(d time.Duration) TriggerOption {
	return func(r *TriggerRequest) { r.Timeout = d }
}

// WithPriority sets the run's priority, from 1 to MaxPriority, in place of
// the definition's (see Definition.Priority): its ready tasks are claimed
// before the same tenant's tasks of lower priority.
func WithPriority(p int) TriggerOption {
	return func(r *TriggerRequest) { r.Priority = p }
}

// Trigger starts a run of workflow for tenant and returns its id at once;
// when the run's idempotency key is taken (see WithKey), it returns the id
// of the run that has it, and starts nothing. A tenant that is not valid
// (see TriggerRequest.Tenant) is an error wrapping ErrInvalidTenant, and
// no run is created.
func (e *Engine) Trigger(ctx context.Context, workflow, tenant string, input any, opts ...TriggerOption) (dag.RunID, error) {
	t, err := e.TriggerRun(ctx, workflow, tenant, input, opts...)
	return t.ID, err
}

// TriggerRun is Trigger, and tells whether the run was started by this call
// or found by its idempotency key.
func (e *Engine) TriggerRun(ctx context.Context, workflow, tenant string, input any, opts ...TriggerOption) (Triggered, error) {
	req := TriggerRequest{Workflow: workflow, Tenant: tenant, Input: input}
	for _, o := range opts {
		o(&req)
	}
	ts, err := e.TriggerManyRuns(ctx, []TriggerRequest{req})
	if err != nil {
		return Triggered{}, err
	}
	return ts[0], nil
}

// TriggerMany starts many runs in one store call: all are created or none.
// Every request is checked first (its workflow registered, its tenant
// valid, its input encodable): one bad request fails the call before
// anything is written. A tenant that is not valid (see
// TriggerRequest.Tenant) is an error wrapping ErrInvalidTenant.
func (e *Engine) TriggerMany(ctx context.Context, reqs []TriggerRequest) ([]dag.RunID, error) {
	ts, err := e.TriggerManyRuns(ctx, reqs)
	if err != nil {
		return nil, err
	}
	ids := make([]dag.RunID, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	return ids, nil
}

// TriggerManyRuns is TriggerMany, and tells for each request whether its
// run was started or found by its idempotency key (two requests of one
// call with the same key start one run).
func (e *Engine) TriggerManyRuns(ctx context.Context, reqs []TriggerRequest) ([]Triggered, error) {
	runs, err := e.newRuns(ctx, reqs)
	if err != nil {
		return nil, err
	}
	tried, all, err := e.startRuns(ctx, runs)
	if !tried {
		err = e.store.CreateRuns(ctx, runs)
	}
	if err != nil {
		return nil, fmt.Errorf("trigger: %w", err)
	}
	if !all {
		e.wakeLoop() // steps were enqueued
	}
	return e.triggered(runs), nil
}

// newRuns checks every request and returns the runs to create, once all
// are known good.
func (e *Engine) newRuns(ctx context.Context, reqs []TriggerRequest) ([]store.NewRun, error) {
	runs := make([]store.NewRun, len(reqs))
	regs := make([]*registered, len(reqs))
	// The runs join the caller's trace: their steps' spans are children
	// of the span in ctx, if any.
	tp := tracing.TraceParent(ctx)
	for i, req := range reqs {
		reg := e.lookup(req.Workflow)
		if reg == nil {
			return nil, fmt.Errorf("trigger %q: %w", req.Workflow, ErrUnknownWorkflow)
		}
		in, err := e.encodePayload("the run's input", req.Input)
		if err != nil {
			return nil, fmt.Errorf("trigger %q: %w", req.Workflow, err)
		}
		nr, err := newRun(reg, req.Tenant, in, req)
		if err != nil {
			return nil, fmt.Errorf("trigger %q: %w", req.Workflow, err)
		}
		nr.TraceParent = tp
		regs[i], runs[i] = reg, nr
	}
	for _, reg := range regs {
		e.recordOnce(ctx, reg) // once every request is known good
	}
	return runs, nil
}

// triggered is what the creation of runs came to, run by run; it counts
// the runs started (a run started in a caller's transaction, when the
// trigger returns: the engine never learns whether it commits).
func (e *Engine) triggered(runs []store.NewRun) []Triggered {
	out := make([]Triggered, len(runs))
	for i, r := range runs {
		out[i] = Triggered{ID: r.ID}
		if !r.Existing.IsZero() {
			out[i] = Triggered{ID: r.Existing, Duplicate: true}
			continue
		}
		e.meters.RunsStarted(r.Workflow, 1)
	}
	return out
}

// encodeInput encodes a workflow input or a signal's payload, which may
// not be nil.
func encodeInput(v any) ([]byte, error) {
	if isNil(v) {
		return nil, ErrNilInput
	}
	in, err := Encode(v)
	if err != nil {
		return nil, errors.Unwrap(err)
	}
	return in, nil
}

// newRun checks a run of reg for tenant with the encoded input in and
// returns it, with a new id, its idempotency key (req's, or the one the
// definition derives), its concurrency cap and its timeout.
func newRun(reg *registered, tenant string, in []byte, req TriggerRequest) (store.NewRun, error) {
	if err := store.ValidTenant(tenant); err != nil {
		return store.NewRun{}, err
	}
	key := req.Key
	if key == "" && reg.def.Key != nil {
		var err error
		if key, err = reg.def.Key(in); err != nil {
			return store.NewRun{}, fmt.Errorf("derive the idempotency key: %w", err)
		}
	}
	if err := store.ValidKey(key); err != nil {
		return store.NewRun{}, err
	}
	// The id carries the tenant's logical shard, so that a sharded store
	// finds the run from its id alone (child runs keep their parent's
	// tenant, hence its shard).
	nr := store.NewRun{ID: dag.NewRunIDIn(store.LogicalShard(tenant)), Workflow: reg.def.Name, Fingerprint: reg.fp, Tenant: tenant, Input: in, Tasks: reg.tasks, Key: key}
	if err := flowOf(&nr, reg.def, req); err != nil {
		return store.NewRun{}, err
	}
	return nr, nil
}

func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}

// Run triggers a run and waits for it to finish.
func (e *Engine) Run(ctx context.Context, workflow, tenant string, input any) (*RunResult, error) {
	id, err := e.Trigger(ctx, workflow, tenant, input)
	if err != nil {
		return nil, err
	}
	return e.Wait(ctx, id)
}

// Wait blocks until the run finishes and returns its result. When the run
// ends FAILED or CANCELLED the result comes with a *RunError. A manual
// engine drives Poll itself and returns ErrRunBlocked when only a timer
// could move the run on.
//
// Until the run finishes Wait reads its status alone, then the run with its
// tasks once: a large input is not read again on every poll.
func (e *Engine) Wait(ctx context.Context, id dag.RunID) (*RunResult, error) {
	wt := waiting{e: e, id: id, first: true}
	state := waitRegister
	if e.cfg.Manual {
		state = waitCheck // Poll runs the run here: nothing wakes a waiter
	}
	for {
		var res *RunResult
		var err error
		if state, res, err = wt.step(ctx, state); state == waitDone {
			return res, err
		}
	}
}

// waitState is where a Wait stands.
type waitState int

const (
	// waitRegister registers a waiter, before the status is read, so a
	// run that finishes after the read wakes it; it stays registered
	// across polls, so the completion that finishes the run here finds it
	// (and reads the run back for it) whenever it comes.
	waitRegister waitState = iota
	// waitCheck reads the run's status, unless a task of the run was held
	// here as the waiter first registered: then the run had not finished,
	// and its completion wakes the waiter (a run just triggered, its first
	// step started here). Later checks read the status: the run may
	// finish on another worker.
	waitCheck
	// waitBlock waits for the run's completion here, a poll's interval,
	// or ctx.
	waitBlock
	// waitPoll does a round of a manual engine's work.
	waitPoll
	// waitRead reads the run and its tasks: it has finished, most likely.
	waitRead
	// waitDone: Wait returns.
	waitDone
)

// waiting is one Wait's state.
type waiting struct {
	e     *Engine
	id    dag.RunID
	w     *waiter // registered, or nil
	first bool    // no waiter registered yet
	held  bool    // a task of the run was held here as w first registered
}

// step does what state says, and returns the next state, and with
// waitDone what Wait returns.
func (wt *waiting) step(ctx context.Context, state waitState) (waitState, *RunResult, error) {
	e, id := wt.e, wt.id
	switch state {
	case waitRegister:
		var held bool
		wt.w, held = e.addWaiter(id)
		wt.held, wt.first = wt.first && held, false
		if e.waitRegistered != nil {
			e.waitRegistered(id)
		}
		return waitCheck, nil, nil
	case waitCheck:
		if wt.held {
			wt.held = false
			return waitBlock, nil, nil
		}
		status, err := e.runStatus(ctx, id)
		if err != nil {
			wt.drop()
			return waitDone, nil, fmt.Errorf("wait for run %s: %w", id, err)
		}
		switch {
		case status.Terminal():
			return waitRead, nil, nil
		case e.cfg.Manual:
			return waitPoll, nil, nil
		}
		return waitBlock, nil, nil
	case waitBlock:
		t := time.NewTimer(e.cfg.PollInterval * 4)
		defer t.Stop()
		select {
		case <-wt.w.ch: // finished removed it
			// Read back by the completion that finished it, after its
			// commit: a retry may have made the run RUNNING again in
			// between, and then it is read again, and waited for.
			if run := wt.w.run; run != nil && run.Run.Status.Terminal() {
				res, err := resultOf(run.Run, run.Tasks)
				return waitDone, res, err
			}
			wt.w = nil
			return waitRead, nil, nil
		case <-t.C:
			return waitCheck, nil, nil
		case <-ctx.Done():
			wt.drop()
			return waitDone, nil, fmt.Errorf("wait for run %s: %w", id, ctx.Err())
		}
	case waitPoll:
		n, err := e.Poll(ctx)
		if err != nil {
			return waitDone, nil, fmt.Errorf("wait for run %s: %w", id, err)
		}
		if n == 0 {
			if status, err := e.runStatus(ctx, id); err == nil && !status.Terminal() {
				return waitDone, nil, fmt.Errorf("wait for run %s: %w", id, ErrRunBlocked)
			}
		}
		return waitCheck, nil, nil
	case waitRead:
		wt.drop()
		res, err := e.read(ctx, id)
		if res == nil {
			return waitDone, nil, fmt.Errorf("wait for run %s: %w", id, err)
		}
		if res.Status.Terminal() {
			return waitDone, res, err
		}
		if e.cfg.Manual {
			return waitCheck, nil, nil
		}
		return waitRegister, nil, nil
	}
	return waitDone, nil, fmt.Errorf("wait for run %s: unknown state %d", id, state)
}

// drop removes the waiter, if one is registered.
func (wt *waiting) drop() {
	if wt.w != nil {
		wt.e.dropWaiter(wt.id, wt.w)
		wt.w = nil
	}
}

// runStatus reads a run's status, without its input.
func (e *Engine) runStatus(ctx context.Context, id dag.RunID) (store.RunStatus, error) {
	return e.store.RunStatus(ctx, id)
}

// Result returns a run's current status and tasks, finished or not, and,
// for an unfinished run, the tasks that wait for a worker that serves them.
func (e *Engine) Result(ctx context.Context, id dag.RunID) (*RunResult, error) {
	res, err := e.read(ctx, id)
	var runErr *RunError
	if errors.As(err, &runErr) {
		err = nil
	}
	if err != nil {
		return res, err
	}
	if res.Waiting, err = e.waitingTasks(ctx, res); err != nil {
		return nil, fmt.Errorf("result of run %s: %w", id, err)
	}
	return res, nil
}

// read reads a run and its tasks, in one store call.
func (e *Engine) read(ctx context.Context, id dag.RunID) (*RunResult, error) {
	run, tasks, err := e.store.ReadRun(ctx, id)
	if err != nil {
		return nil, err
	}
	return resultOf(run, tasks)
}

// resultOf is the result of a run with these tasks; a FAILED or CANCELLED
// run comes with a *RunError.
func resultOf(run store.Run, tasks []store.Task) (*RunResult, error) {
	res := &RunResult{ID: run.ID, Workflow: run.Workflow, Tenant: run.Tenant, Status: run.Status, Failure: run.Failure, Tasks: make(map[string]store.Task, len(tasks))}
	for _, t := range tasks {
		res.Tasks[t.Name] = t
	}
	switch run.Status {
	case store.RunFailed, store.RunCancelled:
		return res, &RunError{RunID: run.ID, Status: run.Status, Failure: run.Failure}
	}
	return res, nil
}

// Events returns a run's event log, oldest first.
func (e *Engine) Events(ctx context.Context, id dag.RunID) ([]store.Event, error) {
	return e.store.ListEvents(ctx, id)
}

// Cancel cancels a running run: nothing more of it is scheduled, and steps
// of it executing on this engine see their ctx done. Steps of it executing
// on other started engines see theirs done within moments, when the
// store's cancel notification (store.CancelNotifier) reaches them, and at
// the latest at their engines' next heartbeat. It reports whether the run
// was running.
func (e *Engine) Cancel(ctx context.Context, id dag.RunID) (bool, error) {
	ok, err := e.store.CancelRun(ctx, id)
	if err != nil {
		return false, fmt.Errorf("cancel run %s: %w", id, err)
	}
	e.runMu.Lock()
	if sc := e.runs[id]; sc != nil {
		sc.cancel()
	}
	e.runMu.Unlock()
	e.notify(id)
	if w := e.running(); w != nil && ok {
		// Its children still under way are cancelled by timers due now
		// (store.KindChild): fire them here rather than at the next look.
		w.NoteTimer(time.Now())
	}
	return ok, nil
}

// enterRun returns a context for a step of run id that Cancel can reach.
func (e *Engine) enterRun(parent context.Context, id dag.RunID) context.Context {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	sc := e.runs[id]
	if sc == nil || sc.ctx.Err() != nil {
		// A cancelled scope whose steps have not all left yet belongs to
		// the run before an operator retried it (store.Retrier): the new
		// step gets a scope of its own, which the old steps leave too.
		ctx, cancel := context.WithCancel(parent)
		next := &runScope{ctx: ctx, cancel: cancel}
		if sc != nil {
			next.refs = sc.refs
		}
		sc = next
		e.runs[id] = sc
	}
	sc.refs++
	return sc.ctx
}

func (e *Engine) leaveRun(id dag.RunID) {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	if sc := e.runs[id]; sc != nil {
		if sc.refs--; sc.refs == 0 {
			sc.cancel()
			delete(e.runs, id)
		}
	}
}
