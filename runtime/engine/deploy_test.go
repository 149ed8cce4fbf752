package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// Safe deploys (DESIGN §5): two builds of one workflow "pub" share a
// store. v1 is
//
//	Fetch (T.Doc) → Pause (a sleep) → Publish(after=Fetch,Pause)
//
// and each test changes it in one way for v2. Every step records what it
// read (deployJournal); the tests check that no step ever read data that
// was not its own run's, produced by the parent it asked for, and that no
// run failed: a run whose step v2 cannot serve waits for a v1 worker.

// The values the builds pass around. Every value carries a stamp naming
// the logical step that made it and its run, so a step handed another
// step's or another run's data sees it.
type (
	pubJob struct {
		N   int
		Nap time.Duration
	} // T.Job; Nap is how long Pause sleeps
	pubDoc  struct{ Text string } // T.Doc: Text "fetch:<run>"
	pubDoc2 struct {
		Body  string
		Words int
	} // T.Doc2: Body "fetch:<run>", Words 2
	pubEnriched struct{ Source, Note string } // T.Enriched: Source Fetch's stamp, Note "enrich:<run>"
	pubReceipt  struct{ URL string }          // T.Receipt: URL "publish:<run>"
)

const (
	pubDocType  = "T.Doc"
	pubDoc2Type = "T.Doc2"
)

// pubBuild says how one build wires workflow "pub".
type pubBuild struct {
	code        string // which build: recorded by every step it runs
	docType     string // Fetch's output type: pubDocType or pubDoc2Type (another JSON shape)
	pause       bool   // Pause after=Fetch, and Publish after it
	enrich      bool   // Enrich after=Fetch (T.Enriched); Publish reads it instead of Fetch
	publishName string // Publish's stored name
	audit       bool   // a leaf Audit after=Publish
}

var pubV1 = pubBuild{code: "v1", docType: pubDocType, pause: true, publishName: "Publish"}

// deployEntry is one execution of a step: which build ran it, for which
// run, and what it read, by what it read ("input", a parent's stored name,
// "Enrich.Source", "parents": the stored names of the parents the task
// has).
type deployEntry struct {
	Code string
	Step string
	Run  dag.RunID
	Got  map[string]string
	// Declared is the parents the running build's step lists, sorted.
	Declared string
}

type deployJournal struct {
	mu      sync.Mutex
	entries []deployEntry
}

// note records what a step got; parents are read from in and listed.
func (j *deployJournal) note(code string, in engine.StepInput, declared []engine.Parent, got map[string]string) {
	names := make([]string, 0, len(in.Parents))
	for _, p := range in.Parents {
		names = append(names, p.Step)
	}
	slices.Sort(names)
	got["parents"] = strings.Join(names, ",")
	decl := make([]string, 0, len(declared))
	for _, p := range declared {
		decl = append(decl, p.Name)
	}
	slices.Sort(decl)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries = append(j.entries, deployEntry{Code: code, Step: in.Info.Step, Run: in.Info.RunID, Got: got, Declared: strings.Join(decl, ",")})
}

// byRun returns the entries of each run, in the order they ran.
func (j *deployJournal) byRun() map[dag.RunID][]deployEntry {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make(map[dag.RunID][]deployEntry)
	for _, e := range j.entries {
		out[e.Run] = append(out[e.Run], e)
	}
	return out
}

// check asserts that every step read only what its parents produced in its
// own run, that the task had exactly the parents the step's code lists,
// and that Fetch read its run's input; inputs is each run's Job.N.
func (j *deployJournal) check(t *testing.T, inputs map[dag.RunID]int) {
	t.Helper()
	for run, entries := range j.byRun() {
		n, ok := inputs[run]
		require.True(t, ok, "a step ran for run %s, which the test did not start", run)
		for _, e := range entries {
			require.Equal(t, e.Declared, e.Got["parents"], "%s %s of run %s: the task's parents are not the ones its code reads: %+v", e.Code, e.Step, run, e)
			for what, got := range e.Got {
				var want string
				switch what {
				case "parents":
					continue
				case "input":
					want = fmt.Sprint(n)
				case "Fetch", "Enrich.Source":
					want = "fetch:" + run.String()
				case "Enrich":
					want = "enrich:" + run.String()
				case "Pause":
					want = string(store.TaskCompleted)
				case "Publish", "Release":
					want = "publish:" + run.String()
				default:
					t.Fatalf("%s %s of run %s read unknown %q", e.Code, e.Step, run, what)
				}
				require.Equal(t, want, got, "%s %s of run %s read %s that is not what its run's parent produced", e.Code, e.Step, run, what)
			}
		}
	}
}

// ran returns, for run, which builds ran each step, by stored name.
func (j *deployJournal) ran(run dag.RunID) map[string][]string {
	out := make(map[string][]string)
	for _, e := range j.byRun()[run] {
		out[e.Step] = append(out[e.Step], e.Code)
	}
	return out
}

// readFetch reads Fetch's output as a build whose Fetch makes docType
// does, and returns its stamp; a decode error is returned as the stamp too,
// so the journal shows it.
func readFetch(in engine.StepInput, docType string) (string, error) {
	if docType == pubDoc2Type {
		d, err := engine.ParentOutput[pubDoc2](in, "Fetch")
		if err != nil {
			return "error: " + err.Error(), err
		}
		if d.Words != 2 {
			return fmt.Sprintf("%s (words %d)", d.Body, d.Words), nil
		}
		return d.Body, nil
	}
	d, err := engine.ParentOutput[pubDoc](in, "Fetch")
	if err != nil {
		return "error: " + err.Error(), err
	}
	return d.Text, nil
}

// parentStatus is the status of a parent without output, read by name.
func parentStatus(in engine.StepInput, name string) string {
	for _, p := range in.Parents {
		if p.Step == name {
			return string(p.Status)
		}
	}
	return "missing"
}

// pubDefinition builds workflow "pub" as b says, recording in j.
func pubDefinition(j *deployJournal, b pubBuild) *engine.Definition {
	d := &engine.Definition{Name: "pub", InputType: "T.Job"}
	d.Steps = append(d.Steps, engine.Step{Name: "Fetch", OutputType: b.docType, Run: func(_ context.Context, in engine.StepInput) ([]byte, error) {
		job, err := engine.Input[pubJob](in)
		got := map[string]string{"input": fmt.Sprint(job.N)}
		if err != nil {
			got["input"] = "error: " + err.Error()
		}
		j.note(b.code, in, nil, got)
		if err != nil {
			return nil, err
		}
		stamp := "fetch:" + in.Info.RunID.String()
		if b.docType == pubDoc2Type {
			return engine.Encode(pubDoc2{Body: stamp, Words: 2})
		}
		return engine.Encode(pubDoc{Text: stamp})
	}})
	if b.pause {
		parents := req("Fetch")
		d.Steps = append(d.Steps, engine.Step{Name: "Pause", Kind: engine.KindSleep, Parents: parents, Sleep: func(_ context.Context, in engine.StepInput) (engine.Wake, error) {
			fetched, err := readFetch(in, b.docType)
			j.note(b.code, in, parents, map[string]string{"Fetch": fetched})
			if err != nil {
				return engine.Wake{}, err
			}
			job, err := engine.Input[pubJob](in)
			return engine.Wake{Delay: job.Nap}, err
		}})
	}
	first := "Fetch"
	if b.enrich {
		first = "Enrich"
		parents := req("Fetch")
		d.Steps = append(d.Steps, engine.Step{Name: "Enrich", OutputType: "T.Enriched", Parents: parents, Run: func(_ context.Context, in engine.StepInput) ([]byte, error) {
			fetched, err := readFetch(in, b.docType)
			j.note(b.code, in, parents, map[string]string{"Fetch": fetched})
			if err != nil {
				return nil, err
			}
			return engine.Encode(pubEnriched{Source: fetched, Note: "enrich:" + in.Info.RunID.String()})
		}})
	}
	publishParents := req(first)
	if b.pause {
		publishParents = req(first, "Pause")
	}
	d.Steps = append(d.Steps, engine.Step{Name: b.publishName, OutputType: "T.Receipt", Parents: publishParents, Run: func(_ context.Context, in engine.StepInput) ([]byte, error) {
		got := map[string]string{}
		var err error
		if b.enrich {
			var e pubEnriched
			if e, err = engine.ParentOutput[pubEnriched](in, "Enrich"); err != nil {
				got["Enrich"] = "error: " + err.Error()
			} else {
				got["Enrich"], got["Enrich.Source"] = e.Note, e.Source
			}
		} else {
			got["Fetch"], err = readFetch(in, b.docType)
		}
		if b.pause {
			got["Pause"] = parentStatus(in, "Pause")
		}
		j.note(b.code, in, publishParents, got)
		if err != nil {
			return nil, err
		}
		return engine.Encode(pubReceipt{URL: "publish:" + in.Info.RunID.String()})
	}})
	if b.audit {
		parents := req(b.publishName)
		d.Steps = append(d.Steps, engine.Step{Name: "Audit", Parents: parents, Run: func(_ context.Context, in engine.StepInput) ([]byte, error) {
			r, err := engine.ParentOutput[pubReceipt](in, b.publishName)
			got := map[string]string{b.publishName: r.URL}
			if err != nil {
				got[b.publishName] = "error: " + err.Error()
			}
			j.note(b.code, in, parents, got)
			return nil, err
		}})
	}
	return d
}

// stepNames returns the stored step names of d, sorted.
func stepNames(d *engine.Definition) []string {
	var names []string
	for _, s := range d.Steps {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	return names
}

// taskNames returns the names of a run's tasks, sorted.
func taskNames(res *engine.RunResult) []string {
	var names []string
	for n := range res.Tasks {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// shiftClock is a store clock that runs with the wall clock, off by an
// offset the test moves: it starts an hour behind, so sleeps of an hour
// end only when the test sets it right (and then at once). It runs rather
// than stands still so that heartbeats and leases behave as they do in
// production. It is never ahead of the wall clock: the engine compares the
// store's queue times with its own clock for the grace before a WAITING
// event, which would then never pass. Being behind has a cost too: while
// a timer is due by the worker's clock but not by the store's, the
// worker's poller spins without waiting; the tests keep that short by
// stopping v1 as soon as its runs sleep.
type shiftClock struct{ offset atomic.Int64 }

func (c *shiftClock) Now() time.Time        { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *shiftClock) Set(off time.Duration) { c.offset.Store(int64(off)) }

// eachStoreShifted is eachStore with the storage on a shiftClock an hour
// behind.
func eachStoreShifted(t *testing.T, test func(t *testing.T, clock *shiftClock, open func() store.Store)) {
	t.Run("memstore", func(t *testing.T) {
		t.Parallel()
		clock := &shiftClock{}
		clock.Set(-time.Hour)
		st := memstore.New(&memstore.Config{Now: clock.Now})
		test(t, clock, func() store.Store { return st })
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		clock := &shiftClock{}
		clock.Set(-time.Hour)
		schema := schemas.Get(t)
		test(t, clock, func() store.Store {
			st, err := pgstore.New(context.Background(), pgtest.Pool(t, schema, 8), &pgstore.Config{Now: clock.Now})
			require.NoError(t, err)
			return st
		})
	})
}

// waitingEvents returns the WAITING events of a run's task.
func waitingEvents(t *testing.T, ctx context.Context, e *engine.Engine, id dag.RunID, step string) []store.Event {
	t.Helper()
	events, err := e.Events(ctx, id)
	require.NoError(t, err)
	var out []store.Event
	for _, ev := range events {
		if ev.Type == store.EventWaiting && ev.Step == step {
			out = append(out, ev)
		}
	}
	return out
}

// awaitResult polls e.Result for run id until check says it is done, and
// fails at once when check says something went wrong (what the test
// waited for, what went wrong) or ctx ends.
func awaitResult(t *testing.T, ctx context.Context, e *engine.Engine, id dag.RunID, what string, check func(*engine.RunResult) (done bool, wrong string)) *engine.RunResult {
	t.Helper()
	for {
		res, err := e.Result(ctx, id)
		require.NoError(t, err)
		done, wrong := check(res)
		if wrong != "" {
			t.Fatalf("run %s did not %s: %s; tasks %v", id, what, wrong, statuses(res))
		}
		if done {
			return res
		}
		select {
		case <-ctx.Done():
			t.Fatalf("run %s did not %s: %v; tasks %v, waiting %v", id, what, ctx.Err(), statuses(res), res.Waiting)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// stillRunning says what is wrong when a run that should be RUNNING is not.
func stillRunning(res *engine.RunResult) string {
	if res.Status == store.RunRunning {
		return ""
	}
	if res.Failure != nil {
		return fmt.Sprintf("it is %s: %v", res.Status, *res.Failure)
	}
	return fmt.Sprintf("it is %s", res.Status)
}

// deployCase is one change from v1 to v2.
type deployCase struct {
	v2 pubBuild
	// oldOnV2 says whether v2 serves the old runs' Publish: its signature
	// is v1's.
	oldOnV2 bool
}

// testDeploy runs the deploy: a v1 worker starts runs that reach Pause and
// stops; the store's clock moves so their sleeps end; a v2 worker starts
// and runs new runs to completion. When v2 has Publish's v1 signature
// (oldOnV2) it finishes the old runs too; otherwise they wait, QUEUED, with
// Result.Waiting and one WAITING event saying so, and never FAILED, until a
// v1 worker starts again and finishes them.
func testDeploy(t *testing.T, clock *shiftClock, open func() store.Store, c deployCase) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	j := &deployJournal{}
	d1, d2 := pubDefinition(j, pubV1), pubDefinition(j, c.v2)
	sig1 := d1.Signatures()
	sig2 := d2.Signatures()
	sig2Publish, v2HasPublish := sig2["Publish"]
	require.Equal(t, c.oldOnV2, v2HasPublish && sig2Publish == sig1["Publish"],
		"whether v2 serves v1's Publish is what the case says")
	inputs := make(map[dag.RunID]int)

	// v1 starts runs; they fetch and go to sleep for an hour of the
	// store's clock.
	w1 := worker(t, open(), "v1", d1)
	var old []dag.RunID
	for i := range 3 {
		id, err := w1.Trigger(ctx, "pub", "t", pubJob{N: i, Nap: time.Hour})
		require.NoError(t, err)
		old = append(old, id)
		inputs[id] = i
	}
	for _, id := range old {
		awaitResult(t, ctx, w1, id, "reach the sleep", func(res *engine.RunResult) (bool, string) {
			return res.Tasks["Pause"].Status == store.TaskSleeping, stillRunning(res)
		})
	}
	require.NoError(t, w1.Stop(ctx))
	// No worker runs now. The sleeps end: the first timer round of v2
	// wakes them and queues their Publish.
	clock.Set(0)

	// v2 starts and runs new runs.
	v2store := spy(open())
	w2 := worker(t, v2store, "v2", d2)
	var fresh []dag.RunID
	for i := range 3 {
		id, err := w2.Trigger(ctx, "pub", "t", pubJob{N: 100 + i})
		require.NoError(t, err)
		fresh = append(fresh, id)
		inputs[id] = 100 + i
	}
	for _, id := range fresh {
		res, err := w2.Wait(ctx, id)
		require.NoError(t, err, "a new run completes on v2")
		require.Equal(t, store.RunCompleted, res.Status)
		require.Equal(t, stepNames(d2), taskNames(res), "a new run has v2's steps")
		for name, task := range res.Tasks {
			require.Equal(t, store.TaskCompleted, task.Status, "step %s of new run %s", name, id)
			require.Equal(t, "v2", task.Worker, "step %s of new run %s ran on v2", name, id)
		}
		for step, codes := range j.ran(id) {
			require.Equal(t, []string{"v2"}, codes, "step %s of new run %s ran once, on v2's code", step, id)
		}
	}

	if c.oldOnV2 {
		for _, id := range old {
			res, err := w2.Wait(ctx, id)
			require.NoError(t, err, "v2 has Publish's signature: it finishes the old run")
			require.Equal(t, store.RunCompleted, res.Status)
			// A run keeps the shape it was started with: a step added
			// since (Audit, in the leaf case) is not part of it.
			require.Equal(t, stepNames(d1), taskNames(res), "the old run keeps v1's steps")
			require.Equal(t, "v2", res.Tasks["Publish"].Worker)
			require.Empty(t, waitingEvents(t, ctx, w2, id, "Publish"), "a task v2 serves is not reported waiting")
		}
	} else {
		sig := sig1["Publish"]
		for _, id := range old {
			res := awaitResult(t, ctx, w2, id, "wait for a v1 worker", func(res *engine.RunResult) (bool, string) {
				if wrong := stillRunning(res); wrong != "" {
					return false, wrong
				}
				if p := res.Tasks["Publish"]; p.Attempt > 0 {
					return false, fmt.Sprintf("Publish was claimed (attempt %d, %s, on %s)", p.Attempt, p.Status, p.Worker)
				}
				return res.Tasks["Publish"].Status == store.TaskQueued && len(res.Waiting) > 0, ""
			})
			require.Equal(t, []engine.Waiting{{RunID: id, Workflow: "pub", Step: "Publish", Signature: sig, Since: res.Waiting[0].Since}}, res.Waiting)
			require.False(t, res.Waiting[0].Since.IsZero(), "Waiting says since when")
			require.Contains(t, engine.WaitingMessage(res.Waiting[0]), "waiting: no live worker serves Publish (signature "+sig+")")
			for len(waitingEvents(t, ctx, w2, id, "Publish")) == 0 {
				select {
				case <-ctx.Done():
					t.Fatalf("old run %s: the leader logged no WAITING event for Publish: %v", id, ctx.Err())
				case <-time.After(2 * time.Millisecond):
				}
			}
			// After the grace: the leader reports only tasks queued for
			// 2×HeartbeatInterval (worker's is 20 ms) by then.
			ev := waitingEvents(t, ctx, w2, id, "Publish")[0]
			require.GreaterOrEqual(t, ev.At.Sub(res.Waiting[0].Since), 40*time.Millisecond, "WAITING logged before the grace was over")
		}
		// More rounds of v2's poller and of its housekeeping (it leads: it
		// is the only worker): it still does not claim Publish, and logs
		// its WAITING event once.
		require.NoError(t, waitRounds(ctx, &v2store.polls, 5))
		require.NoError(t, waitRounds(ctx, &v2store.sweeps, 3))
		for _, id := range old {
			res, err := w2.Result(ctx, id)
			require.NoError(t, err)
			require.Equal(t, store.RunRunning, res.Status)
			require.Equal(t, store.TaskQueued, res.Tasks["Publish"].Status, "v2 does not run old run %s's Publish", id)
			require.Zero(t, res.Tasks["Publish"].Attempt)
			events := waitingEvents(t, ctx, w2, id, "Publish")
			require.Len(t, events, 1, "one WAITING event per queued round")
			require.Equal(t, store.WaitingDetail("Publish", sig), events[0].Detail)
		}

		// v1 comes back and finishes them, beside v2.
		worker(t, open(), "v1-again", d1)
		for _, id := range old {
			res, err := w2.Wait(ctx, id)
			require.NoError(t, err, "a v1 worker finishes old run %s", id)
			require.Equal(t, store.RunCompleted, res.Status)
			require.Equal(t, stepNames(d1), taskNames(res))
			require.Equal(t, "v1-again", res.Tasks["Publish"].Worker)
			res, err = w2.Result(ctx, id)
			require.NoError(t, err)
			require.Empty(t, res.Waiting)
		}
	}

	j.check(t, inputs)
	publisher := "v1"
	if c.oldOnV2 {
		publisher = "v2"
	}
	for _, id := range old {
		require.Equal(t, map[string][]string{"Fetch": {"v1"}, "Pause": {"v1"}, "Publish": {publisher}}, j.ran(id),
			"old run %s: each step ran once, Publish on %s's code, nothing of v2's shape", id, publisher)
	}
}

// An inserted parent: v2 has Enrich (T.Enriched) and Publish reads it
// instead of Fetch. Publish's signature differs, so v2 never hands an old
// run's Fetch output to its Publish as Enriched.
func TestDeployInsertedParent(t *testing.T) {
	eachStoreShifted(t, func(t *testing.T, clock *shiftClock, open func() store.Store) {
		v2 := pubV1
		v2.code, v2.enrich = "v2", true
		testDeploy(t, clock, open, deployCase{v2: v2})
	})
}

// Publish renamed without name=: v2 calls it Release. The old runs'
// Publish waits for v1.
func TestDeployRenamedStep(t *testing.T) {
	eachStoreShifted(t, func(t *testing.T, clock *shiftClock, open func() store.Store) {
		v2 := pubV1
		v2.code, v2.publishName = "v2", "Release"
		testDeploy(t, clock, open, deployCase{v2: v2})
	})
}

// Publish renamed with name=: the Go function differs (v2's records "v2")
// but the stored name stays Publish, so the signature is the same and v2
// finishes the old runs.
func TestDeployRenamedWithName(t *testing.T) {
	eachStoreShifted(t, func(t *testing.T, clock *shiftClock, open func() store.Store) {
		v2 := pubV1
		v2.code = "v2"
		testDeploy(t, clock, open, deployCase{v2: v2, oldOnV2: true})
	})
}

// Pause removed: Publish's parents change, so the old runs wait for v1.
func TestDeployRemovedSleep(t *testing.T) {
	eachStoreShifted(t, func(t *testing.T, clock *shiftClock, open func() store.Store) {
		v2 := pubV1
		v2.code, v2.pause = "v2", false
		testDeploy(t, clock, open, deployCase{v2: v2})
	})
}

// Fetch's output type changed (T.Doc → T.Doc2, another JSON shape, which
// v2's Publish would decode without error into empty fields): Publish's
// signature differs, and the old runs wait for v1.
func TestDeployChangedOutputType(t *testing.T) {
	eachStoreShifted(t, func(t *testing.T, clock *shiftClock, open func() store.Store) {
		v2 := pubV1
		v2.code, v2.docType = "v2", pubDoc2Type
		testDeploy(t, clock, open, deployCase{v2: v2})
	})
}

// A leaf added: v2 has Audit after=Publish. Publish's signature is the
// same, so v2 finishes the old runs, which do not run Audit: a run keeps
// the shape it was started with (documented: adding a leaf step is not a
// break, DESIGN §5). New runs run Audit.
func TestDeployAddedLeaf(t *testing.T) {
	eachStoreShifted(t, func(t *testing.T, clock *shiftClock, open func() store.Store) {
		v2 := pubV1
		v2.code, v2.audit = "v2", true
		testDeploy(t, clock, open, deployCase{v2: v2, oldOnV2: true})
	})
}

func TestRollingDeploy(t *testing.T) {
	eachStore(t, testRollingDeploy)
}

// testRollingDeploy runs v1 and v2 (an inserted parent, as in
// TestDeployInsertedParent) side by side under load: runs are triggered
// from goroutines on both builds while a v1 worker is replaced by a v2
// one. Every run completes; each step ran once, on a build whose code
// has its signature, and read exactly what its run's parents produced.
func testRollingDeploy(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	j := &deployJournal{}
	v2 := pubV1
	v2.code, v2.enrich = "v2", true
	v1a := worker(t, open(), "v1-a", pubDefinition(j, pubV1))
	v1b := worker(t, open(), "v1-b", pubDefinition(j, pubV1))
	v2a := worker(t, open(), "v2-a", pubDefinition(j, v2))

	const perGoroutine = 75
	var (
		mu       sync.Mutex
		inputs   = make(map[dag.RunID]int)
		builtBy  = make(map[dag.RunID]string) // which build started the run
		errs     []error
		started  atomic.Int64
		wg       sync.WaitGroup
		triggers = []struct {
			e    *engine.Engine
			code string
		}{{v1b, "v1"}, {v1b, "v1"}, {v2a, "v2"}, {v2a, "v2"}}
	)
	for g, tr := range triggers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perGoroutine {
				n := g*1000 + i
				id, err := tr.e.Trigger(ctx, "pub", fmt.Sprintf("t%d", i%3), pubJob{N: n, Nap: time.Duration(i%3) * time.Millisecond})
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					inputs[id], builtBy[id] = n, tr.code
				}
				mu.Unlock()
				started.Add(1)
			}
		}()
	}
	// Halfway, v1-a leaves and v2-b joins.
	for started.Load() < int64(len(triggers)*perGoroutine/2) && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, v1a.Stop(ctx))
	worker(t, open(), "v2-b", pubDefinition(j, v2))
	wg.Wait()
	require.Empty(t, errs)
	require.Len(t, inputs, len(triggers)*perGoroutine)

	servers := map[string][]string{"v1": {"v1-a", "v1-b"}, "v2": {"v2-a", "v2-b"}}
	for id, code := range builtBy {
		res, err := v2a.Wait(ctx, id)
		require.NoError(t, err, "run %s started by %s", id, code)
		require.Equal(t, store.RunCompleted, res.Status)
		for name, task := range res.Tasks {
			require.Equal(t, 1, task.Attempt, "step %s of run %s was claimed once: no worker took it without serving it", name, id)
		}
		// Publish (and v2's Enrich) ran on a worker of the build that
		// started the run: the other has not their signatures.
		require.Contains(t, servers[code], res.Tasks["Publish"].Worker, "Publish of a %s run", code)
		want := map[string][]string{"Fetch": nil, "Pause": nil, "Publish": {code}}
		if code == "v2" {
			want["Enrich"] = []string{"v2"}
			require.Contains(t, servers["v2"], res.Tasks["Enrich"].Worker)
		}
		ran := j.ran(id)
		// Fetch and Pause have the same signature in both builds: either
		// may run them.
		for _, shared := range []string{"Fetch", "Pause"} {
			require.Len(t, ran[shared], 1, "%s of run %s ran once: %v", shared, id, ran)
			want[shared] = ran[shared]
		}
		require.Equal(t, want, ran, "run %s started by %s", id, code)
	}
	j.check(t, inputs)
}
