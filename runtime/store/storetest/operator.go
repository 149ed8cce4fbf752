package storetest

import (
	"slices"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// operatorTests check store.Operator.
var operatorTests = []struct {
	name string
	fn   func(f *fixture, op store.Operator)
}{
	{"ListFilters", testListFilters},
	{"ListNewestFirstPages", testListPages},
	{"ListStableUnderInserts", testListStableUnderInserts},
	{"ListFailure", testListFailure},
	{"CountRuns", testCountRuns},
	{"CancelRunsByFilter", testCancelRunsByFilter},
	{"CancelRunsRacingTriggers", testCancelRunsRacingTriggers},
}

// fresh returns a run whose id is newer than every id made before: ids
// made in one millisecond are not ordered among themselves.
func fresh(workflow, tenant string, tasks ...store.NewTask) store.NewRun {
	time.Sleep(2 * time.Millisecond)
	return newRun(workflow, tenant, tasks...)
}

// listAll pages through every run matching flt, checking each page.
func listAll(f *fixture, op store.Operator, flt store.RunFilter) []dag.RunID {
	f.t.Helper()
	var ids []dag.RunID
	for range 1000 {
		page, err := op.ListRuns(f.ctx, flt)
		require.NoError(f.t, err)
		for _, r := range page.Runs {
			ids = append(ids, r.ID)
		}
		if page.Next.IsZero() {
			return ids
		}
		require.Equal(f.t, page.Runs[len(page.Runs)-1].ID, page.Next, "Next is the last run's id")
		flt.After = page.Next
	}
	f.t.Fatal("too many pages")
	return nil
}

// newestFirst returns the ids of runs, newest first.
func newestFirst(runs ...store.NewRun) []dag.RunID {
	ids := make([]dag.RunID, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	slices.SortFunc(ids, func(a, b dag.RunID) int { return -compareIDs(a, b) })
	return ids
}

func testListFilters(f *fixture, op store.Operator) {
	t := f.t
	a1 := fresh("a", "t1", task("s"))
	a2 := fresh("a", "t2", task("s"))
	f.create(a1, a2)
	f.clock.advance(time.Hour)
	b1 := fresh("b", "t1", task("s"))
	b2 := fresh("b", "t2", task("s"))
	f.create(b1, b2)
	_, err := f.st.CancelRun(f.ctx, a2.ID)
	require.NoError(t, err)
	_, err = f.st.CancelRun(f.ctx, b1.ID)
	require.NoError(t, err)

	cases := []struct {
		name string
		flt  store.RunFilter
		want []store.NewRun
	}{
		{"all", store.RunFilter{}, []store.NewRun{a1, a2, b1, b2}},
		{"workflow", store.RunFilter{Workflow: "a"}, []store.NewRun{a1, a2}},
		{"tenant", store.RunFilter{Tenant: "t1"}, []store.NewRun{a1, b1}},
		{"status", store.RunFilter{Statuses: []store.RunStatus{store.RunCancelled}}, []store.NewRun{a2, b1}},
		{"statuses", store.RunFilter{Statuses: []store.RunStatus{store.RunCancelled, store.RunRunning}}, []store.NewRun{a1, a2, b1, b2}},
		{"created from", store.RunFilter{CreatedFrom: epoch.Add(time.Hour)}, []store.NewRun{b1, b2}},
		{"created to", store.RunFilter{CreatedTo: epoch.Add(time.Hour)}, []store.NewRun{a1, a2}},
		{"created range", store.RunFilter{CreatedFrom: epoch, CreatedTo: epoch.Add(time.Minute)}, []store.NewRun{a1, a2}},
		{"workflow and tenant", store.RunFilter{Workflow: "b", Tenant: "t2"}, []store.NewRun{b2}},
		{"workflow and status", store.RunFilter{Workflow: "a", Statuses: []store.RunStatus{store.RunRunning}}, []store.NewRun{a1}},
		{"all filters", store.RunFilter{Workflow: "b", Tenant: "t1", Statuses: []store.RunStatus{store.RunCancelled}, CreatedFrom: epoch.Add(time.Hour), CreatedTo: epoch.Add(2 * time.Hour)}, []store.NewRun{b1}},
		{"no match", store.RunFilter{Workflow: "a", Tenant: "nobody"}, nil},
	}
	for _, c := range cases {
		page, err := op.ListRuns(f.ctx, c.flt)
		require.NoError(t, err, c.name)
		var got []dag.RunID
		for _, r := range page.Runs {
			got = append(got, r.ID)
		}
		var want []dag.RunID
		if len(c.want) > 0 {
			want = newestFirst(c.want...)
		}
		require.Equal(t, want, got, c.name)
		require.True(t, page.Next.IsZero(), c.name)
	}

	page, err := op.ListRuns(f.ctx, store.RunFilter{Workflow: "b", Tenant: "t1"})
	require.NoError(t, err)
	require.Len(t, page.Runs, 1)
	got := page.Runs[0]
	require.Equal(t, store.RunSummary{
		ID: b1.ID, Workflow: "b", Tenant: "t1", Status: store.RunCancelled,
		CreatedAt: got.CreatedAt, FinishedAt: got.FinishedAt,
	}, got)
	require.True(t, got.CreatedAt.Equal(epoch.Add(time.Hour)), "created at %s", got.CreatedAt)
	require.True(t, got.FinishedAt.Equal(epoch.Add(time.Hour)), "finished at %s", got.FinishedAt)
}

func testListPages(f *fixture, op store.Operator) {
	t := f.t
	var runs []store.NewRun
	for i := range 23 {
		wf := "wf"
		if i%4 == 0 {
			wf = "other"
		}
		runs = append(runs, newRun(wf, "t", task("s")))
	}
	f.create(runs...)
	want := newestFirst(runs...)

	page, err := op.ListRuns(f.ctx, store.RunFilter{Limit: 5})
	require.NoError(t, err)
	require.Len(t, page.Runs, 5)
	require.Equal(t, want[4], page.Next)

	require.Equal(t, want, listAll(f, op, store.RunFilter{Limit: 5}), "pages of 5")
	require.Equal(t, want, listAll(f, op, store.RunFilter{Limit: 23}), "one full page")
	require.Equal(t, want, listAll(f, op, store.RunFilter{Limit: 1}), "pages of 1")
	require.Equal(t, want, listAll(f, op, store.RunFilter{}), "default page size")

	var wfWant []dag.RunID
	for _, id := range want {
		for _, r := range runs {
			if r.ID == id && r.Workflow == "wf" {
				wfWant = append(wfWant, id)
			}
		}
	}
	require.Equal(t, wfWant, listAll(f, op, store.RunFilter{Workflow: "wf", Limit: 4}), "filtered pages")

	// A cursor from an exact multiple: the last page is full, then empty.
	page, err = op.ListRuns(f.ctx, store.RunFilter{After: want[len(want)-1]})
	require.NoError(t, err)
	require.Empty(t, page.Runs)
	require.True(t, page.Next.IsZero())

	// More than MaxPageSize is MaxPageSize: here, all of them.
	page, err = op.ListRuns(f.ctx, store.RunFilter{Limit: store.MaxPageSize * 10})
	require.NoError(t, err)
	require.Len(t, page.Runs, len(runs))
}

func testListStableUnderInserts(f *fixture, op store.Operator) {
	t := f.t
	var before []store.NewRun
	for range 12 {
		before = append(before, newRun("wf", "t", task("s")))
	}
	f.create(before...)
	want := newestFirst(before...)

	flt := store.RunFilter{Workflow: "wf", Limit: 5}
	var got []dag.RunID
	for {
		page, err := op.ListRuns(f.ctx, flt)
		require.NoError(t, err)
		for _, r := range page.Runs {
			got = append(got, r.ID)
		}
		// Runs created between pages are newer than the cursor.
		f.create(fresh("wf", "t", task("s")), newRun("wf", "t", task("s")))
		if page.Next.IsZero() {
			break
		}
		flt.After = page.Next
	}
	require.Equal(t, want, got, "nothing skipped, duplicated or added")
}

func testListFailure(f *fixture, op store.Operator) {
	t := f.t
	r := newRun("wf", "t", store.NewTask{Name: "s", Kind: store.KindStep, MaxAttempts: 1, Signature: "wf"})
	f.create(r)
	ct := f.claimOne()
	f.complete(store.TaskResult{RunID: ct.RunID, Step: ct.Step, Attempt: ct.Attempt, Claim: ct.Claim, Outcome: store.OutcomeFailed, Error: "boom"})
	page, err := op.ListRuns(f.ctx, store.RunFilter{Statuses: []store.RunStatus{store.RunFailed}})
	require.NoError(t, err)
	require.Len(t, page.Runs, 1)
	require.Equal(t, store.RunFailed, page.Runs[0].Status)
	require.NotNil(t, page.Runs[0].Failure)
	require.Equal(t, dag.Failure{RunID: r.ID, Step: "s", Attempt: 1, Message: "boom"}, *page.Runs[0].Failure)
	require.False(t, page.Runs[0].FinishedAt.IsZero())
}

func testCountRuns(f *fixture, op store.Operator) {
	t := f.t
	var runs []store.NewRun
	for i := range 7 {
		wf := "a"
		if i >= 5 {
			wf = "b"
		}
		runs = append(runs, newRun(wf, "t", task("s")))
	}
	f.create(runs...)
	for _, r := range runs[:2] {
		_, err := f.st.CancelRun(f.ctx, r.ID)
		require.NoError(t, err)
	}
	counts, err := op.CountRuns(f.ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Equal(t, map[store.RunStatus]int{store.RunRunning: 5, store.RunCancelled: 2}, counts)
	counts, err = op.CountRuns(f.ctx, store.RunFilter{Workflow: "b", Limit: 1, After: runs[0].ID})
	require.NoError(t, err)
	require.Equal(t, map[store.RunStatus]int{store.RunRunning: 2}, counts, "After and Limit are ignored")
	counts, err = op.CountRuns(f.ctx, store.RunFilter{Workflow: "a", Statuses: []store.RunStatus{store.RunCancelled}})
	require.NoError(t, err)
	require.Equal(t, map[store.RunStatus]int{store.RunCancelled: 2}, counts)
	counts, err = op.CountRuns(f.ctx, store.RunFilter{Tenant: "nobody"})
	require.NoError(t, err)
	require.Empty(t, counts)
}

func testCancelRunsByFilter(f *fixture, op store.Operator) {
	t := f.t
	var match []store.NewRun
	for range 5 {
		match = append(match, fresh("wf", "t1", task("a"), task("b", "a"), sleepTask("nap")))
	}
	other := newRun("other", "t1", task("a"))
	otherTenant := newRun("wf", "t2", task("a"))
	finished := newRun("wf", "t1", task("a"))
	f.create(append(slices.Clone(match), other, otherTenant, finished)...)
	ct := f.claim(100)
	var inFlight []store.ClaimedTask
	for _, c := range ct {
		if c.RunID == finished.ID {
			f.complete(done(c, `1`))
		} else if c.RunID == match[0].ID {
			inFlight = append(inFlight, c)
		}
	}
	require.Equal(t, store.RunCompleted, f.run(finished.ID).Status)

	flt := store.RunFilter{Workflow: "wf", Tenant: "t1", Statuses: []store.RunStatus{store.RunCompleted}}
	n, err := op.CancelRuns(f.ctx, flt, 3)
	require.NoError(t, err)
	require.Equal(t, 3, n, "limit respected; statuses ignored")
	oldest := newestFirst(match...)
	slices.Reverse(oldest)
	for i, id := range oldest {
		want := store.RunRunning
		if i < 3 {
			want = store.RunCancelled
		}
		require.Equal(t, want, f.run(id).Status, "oldest first: run %d", i)
	}

	n, err = op.CancelRuns(f.ctx, flt, 100)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	n, err = op.CancelRuns(f.ctx, flt, 100)
	require.NoError(t, err)
	require.Zero(t, n)

	for _, r := range match {
		run := f.run(r.ID)
		require.Equal(t, store.RunCancelled, run.Status)
		require.False(t, run.FinishedAt.IsZero())
		for name, tk := range f.tasks(r.ID) {
			require.Equal(t, store.TaskCancelled, tk.Status, name)
		}
	}
	for _, c := range inFlight {
		require.Equal(t, store.OutcomeStale, f.complete(done(c, `1`))[0].Outcome)
	}
	require.Equal(t, store.RunRunning, f.run(other.ID).Status)
	require.Equal(t, store.RunRunning, f.run(otherTenant.ID).Status)
	require.Equal(t, store.RunCompleted, f.run(finished.ID).Status, "finished runs are untouched")

	// Nothing of the cancelled runs is claimed or fires later.
	f.clock.advance(24 * time.Hour)
	_, err = f.st.FireTimers(f.ctx, 100)
	require.NoError(t, err)
	_, err = f.st.RescueExpired(f.ctx, 100)
	require.NoError(t, err)
	for _, c := range f.claim(100) {
		require.Contains(t, []dag.RunID{other.ID, otherTenant.ID}, c.RunID, "a cancelled run's task was claimed")
	}
	for _, r := range match {
		for name, tk := range f.tasks(r.ID) {
			require.Equal(t, store.TaskCancelled, tk.Status, name)
		}
	}
}

func testCancelRunsRacingTriggers(f *fixture, op store.Operator) {
	t := f.t
	// The seed runs each have a task no worker here serves, so they are
	// still RUNNING when the cancel comes, however fast the worker is.
	var seed []store.NewRun
	for range 150 {
		parked := task("parked")
		parked.Signature = "parked"
		seed = append(seed, newRun("wf", "t", task("a"), task("b", "a"), parked))
	}
	f.create(seed...)

	var (
		mu      sync.Mutex
		created []dag.RunID
		stop    = make(chan struct{})
		wg      sync.WaitGroup
		trigErr error
		workErr error
	)
	wg.Add(2)
	go func() { // a trigger
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			r := newRun("wf", "t", task("a"), task("b", "a"))
			if err := f.st.CreateRuns(f.ctx, []store.NewRun{r}); err != nil {
				trigErr = err
				return
			}
			mu.Lock()
			created = append(created, r.ID)
			mu.Unlock()
		}
	}()
	go func() { // a worker
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			ct, err := f.st.ClaimTasks(f.ctx, store.ClaimParams{Worker: "w", Signatures: []string{"wf"}, Limit: 10, Lease: time.Minute})
			if err != nil {
				workErr = err
				return
			}
			var res []store.TaskResult
			for _, c := range ct {
				res = append(res, done(c, `1`))
			}
			if len(res) > 0 {
				if _, err := f.st.CompleteTasks(f.ctx, res); err != nil {
					workErr = err
					return
				}
			}
		}
	}()

	time.Sleep(20 * time.Millisecond)
	mu.Lock()
	before := slices.Clone(created)
	mu.Unlock()
	n, err := op.CancelRuns(f.ctx, store.RunFilter{Workflow: "wf"}, 1<<30)
	close(stop)
	wg.Wait()
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, len(seed), "every seed run was RUNNING")
	require.NoError(t, trigErr)
	require.NoError(t, workErr)

	for _, r := range seed {
		require.Equal(t, store.RunCancelled, f.run(r.ID).Status)
	}
	for _, id := range before {
		require.Contains(t, []store.RunStatus{store.RunCancelled, store.RunCompleted}, f.run(id).Status)
	}
	// Nothing of a cancelled run is left to claim.
	for _, c := range f.claim(1000) {
		require.Equal(t, store.RunRunning, f.run(c.RunID).Status)
	}
}
