package storetest

import (
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// scheduleTests check store.Scheduler. The store does not read cron
// expressions: the tests pass the slots.
var scheduleTests = []struct {
	name string
	fn   func(f *fixture, sc store.Scheduler)
}{
	{"RegisterCreatesAndLists", testScheduleRegister},
	{"RegisterKeepsNextAtAndPaused", testScheduleRegisterKeeps},
	{"RegisterDeletesLeftOut", testScheduleRegisterDeletes},
	{"Put", testSchedulePut},
	{"PauseAndResume", testSchedulePause},
	{"Delete", testScheduleDelete},
	{"Due", testScheduleDue},
	{"FireCreatesRunAndMoves", testScheduleFire},
	{"FireOncePerDue", testScheduleFireOnce},
	{"FireKeyTaken", testScheduleFireKeyTaken},
	{"FirePausedOrGone", testScheduleFirePausedOrGone},
	{"FireInvalidRunsChangesNothing", testScheduleFireInvalid},
	{"FireManySlotsOrNone", testScheduleFireManyOrNone},
	{"ConcurrentFiresFireOnce", testScheduleConcurrentFires},
	{"Now", testScheduleNow},
}

func ref(workflow, tenant, name string) store.ScheduleRef {
	return store.ScheduleRef{Workflow: workflow, Tenant: tenant, Name: name}
}

// sched is a schedule of workflow for tenant, due next at next.
func sched(workflow, tenant, name, cron string, next time.Time) store.Schedule {
	return store.Schedule{ScheduleRef: ref(workflow, tenant, name), Cron: cron, Catchup: store.CatchupLatest, NextAt: next}
}

func (f *fixture) register(sc store.Scheduler, workflow string, declared ...store.Schedule) {
	f.t.Helper()
	require.NoError(f.t, sc.RegisterSchedules(f.ctx, workflow, declared))
}

func (f *fixture) listSchedules(sc store.Scheduler, workflow, tenant string) []store.Schedule {
	f.t.Helper()
	list, err := sc.ListSchedules(f.ctx, workflow, tenant)
	require.NoError(f.t, err)
	return list
}

// schedule returns the stored schedule r names; ok is false when there is
// none.
func (f *fixture) schedule(sc store.Scheduler, r store.ScheduleRef) (store.Schedule, bool) {
	f.t.Helper()
	for _, s := range f.listSchedules(sc, r.Workflow, r.Tenant) {
		if s.ScheduleRef == r {
			return s, true
		}
	}
	return store.Schedule{}, false
}

func (f *fixture) mustSchedule(sc store.Scheduler, r store.ScheduleRef) store.Schedule {
	f.t.Helper()
	s, ok := f.schedule(sc, r)
	require.True(f.t, ok, "schedule %v exists", r)
	return s
}

func refsOf(list []store.Schedule) []store.ScheduleRef {
	out := make([]store.ScheduleRef, len(list))
	for i, s := range list {
		out[i] = s.ScheduleRef
	}
	return out
}

func requireTime(t require.TestingT, want, got time.Time, msgAndArgs ...any) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	if !want.Equal(got) {
		require.Fail(t, "times differ: want "+want.String()+", got "+got.String(), msgAndArgs...)
	}
}

// slotRun is the run of a schedule's slot: workflow wf for tenant t, keyed
// by the slot.
func slotRun(name string, slot time.Time) store.NewRun {
	r := newRun("wf", "t", task("a"))
	r.Key = store.ScheduleKey(name, slot)
	return r
}

// firing fires the slot due of wf/t/name, next due at next.
func firing(name string, due, next time.Time, runs ...store.NewRun) store.ScheduleFiring {
	fr := store.ScheduleFiring{ScheduleRef: ref("wf", "t", name), Due: due, Next: next, Runs: runs}
	if len(runs) > 0 {
		fr.Last = due
	}
	return fr
}

func (f *fixture) fire(sc store.Scheduler, fr store.ScheduleFiring) bool {
	f.t.Helper()
	ok, err := sc.FireSchedule(f.ctx, fr)
	require.NoError(f.t, err)
	return ok
}

func (f *fixture) requireNoRun(id dag.RunID, msgAndArgs ...any) {
	f.t.Helper()
	_, err := f.st.GetRun(f.ctx, id)
	require.ErrorIs(f.t, err, store.ErrRunNotFound, msgAndArgs...)
}

func (f *fixture) due(sc store.Scheduler, limit int, workflows ...string) []store.ScheduleRef {
	f.t.Helper()
	list, now, err := sc.DueSchedules(f.ctx, workflows, limit)
	require.NoError(f.t, err)
	requireTime(f.t, f.clock.Now(), now, "DueSchedules returns the store's now")
	return refsOf(list)
}

const daily = "0 9 * * *"

func testScheduleRegister(f *fixture, sc store.Scheduler) {
	t := f.t
	h := func(n int) time.Time { return epoch.Add(time.Duration(n) * time.Hour) }
	f.register(sc, "wf",
		sched("wf", "t2", "a", daily, h(1)),
		sched("wf", "t1", "b", "@hourly", h(2)),
		sched("wf", "t1", "a", daily, h(3)),
	)
	f.register(sc, "aw", sched("aw", "t1", "z", daily, h(4)))

	all := f.listSchedules(sc, "", "")
	require.Equal(t, []store.ScheduleRef{
		ref("aw", "t1", "z"), ref("wf", "t1", "a"), ref("wf", "t1", "b"), ref("wf", "t2", "a"),
	}, refsOf(all), "by workflow, tenant and name")
	for _, s := range all {
		require.True(t, s.Declared, "%v is declared", s.ScheduleRef)
		require.False(t, s.Paused)
		require.Nil(t, s.Input)
		require.Equal(t, store.CatchupLatest, s.Catchup)
		require.True(t, s.LastAt.IsZero())
		require.True(t, s.LastRun.IsZero())
	}
	b := f.mustSchedule(sc, ref("wf", "t1", "b"))
	require.Equal(t, "@hourly", b.Cron)
	requireTime(t, h(2), b.NextAt, "NextAt as given")
	requireTime(t, h(4), f.mustSchedule(sc, ref("aw", "t1", "z")).NextAt)

	require.Equal(t, []store.ScheduleRef{ref("wf", "t1", "a"), ref("wf", "t1", "b"), ref("wf", "t2", "a")},
		refsOf(f.listSchedules(sc, "wf", "")), "by workflow")
	require.Equal(t, []store.ScheduleRef{ref("aw", "t1", "z"), ref("wf", "t1", "a"), ref("wf", "t1", "b")},
		refsOf(f.listSchedules(sc, "", "t1")), "by tenant")
	require.Equal(t, []store.ScheduleRef{ref("wf", "t2", "a")}, refsOf(f.listSchedules(sc, "wf", "t2")))
	require.Empty(t, f.listSchedules(sc, "nothing", ""))
}

func testScheduleRegisterKeeps(f *fixture, sc store.Scheduler) {
	t := f.t
	r := ref("wf", "t", "nightly")
	first := epoch.Add(21 * time.Hour)
	f.register(sc, "wf", sched("wf", "t", "nightly", daily, first))
	require.NoError(t, sc.PauseSchedule(f.ctx, r, true, time.Time{}))

	// Same expression and zone: NextAt and Paused are kept; the rest is
	// updated.
	f.clock.advance(time.Hour)
	again := sched("wf", "t", "nightly", daily, epoch.Add(45*time.Hour))
	again.Catchup = store.CatchupAll
	f.register(sc, "wf", again)
	s := f.mustSchedule(sc, r)
	requireTime(t, first, s.NextAt, "the same expression keeps its next slot")
	require.True(t, s.Paused, "registering keeps a pause")
	require.Equal(t, store.CatchupAll, s.Catchup)
	require.True(t, s.Declared)

	// Another expression: its next slot is taken.
	changed := sched("wf", "t", "nightly", "0 10 * * *", epoch.Add(22*time.Hour))
	f.register(sc, "wf", changed)
	s = f.mustSchedule(sc, r)
	requireTime(t, epoch.Add(22*time.Hour), s.NextAt, "a new expression moves the next slot")
	require.Equal(t, "0 10 * * *", s.Cron)
	require.True(t, s.Paused, "still paused")

	// Another zone: likewise.
	zoned := changed
	zoned.Zone, zoned.NextAt = "Europe/Paris", epoch.Add(20*time.Hour)
	f.register(sc, "wf", zoned)
	s = f.mustSchedule(sc, r)
	requireTime(t, epoch.Add(20*time.Hour), s.NextAt, "a new zone moves the next slot")
	require.Equal(t, "Europe/Paris", s.Zone)
	require.True(t, s.Paused)
	require.Len(t, f.listSchedules(sc, "", ""), 1, "updated by name, not added")
}

func testScheduleRegisterDeletes(f *fixture, sc store.Scheduler) {
	t := f.t
	next := epoch.Add(time.Hour)
	f.register(sc, "wf", sched("wf", "t", "keep", daily, next), sched("wf", "t", "drop", daily, next))
	f.register(sc, "other", sched("other", "t", "drop", daily, next))
	require.NoError(t, sc.PutSchedule(f.ctx, sched("wf", "t", "made", daily, next)))

	f.register(sc, "wf", sched("wf", "t", "keep", daily, next))
	require.Equal(t, []store.ScheduleRef{ref("other", "t", "drop"), ref("wf", "t", "keep"), ref("wf", "t", "made")},
		refsOf(f.listSchedules(sc, "", "")),
		"a declared schedule left out is deleted; one of another workflow and one made at run time are not")

	f.register(sc, "wf")
	require.Equal(t, []store.ScheduleRef{ref("other", "t", "drop"), ref("wf", "t", "made")},
		refsOf(f.listSchedules(sc, "", "")), "an empty list deletes every declared schedule of the workflow")
}

func testSchedulePut(f *fixture, sc store.Scheduler) {
	t := f.t
	r := ref("wf", "t", "report")
	s := sched("wf", "t", "report", daily, epoch.Add(21*time.Hour))
	s.Input, s.Catchup = []byte(`{"x":1}`), store.CatchupNone
	require.NoError(t, sc.PutSchedule(f.ctx, s))
	got := f.mustSchedule(sc, r)
	require.False(t, got.Declared)
	require.False(t, got.Paused)
	require.JSONEq(t, `{"x":1}`, string(got.Input), "the input is kept")
	require.Equal(t, store.CatchupNone, got.Catchup)
	require.Equal(t, daily, got.Cron)
	requireTime(t, epoch.Add(21*time.Hour), got.NextAt)

	// Replaced with the same expression: NextAt and Paused are kept, the
	// input is replaced.
	require.NoError(t, sc.PauseSchedule(f.ctx, r, true, time.Time{}))
	s.Input, s.NextAt = []byte(`{"x":2}`), epoch.Add(45*time.Hour)
	require.NoError(t, sc.PutSchedule(f.ctx, s))
	got = f.mustSchedule(sc, r)
	require.JSONEq(t, `{"x":2}`, string(got.Input))
	requireTime(t, epoch.Add(21*time.Hour), got.NextAt, "the same expression keeps its next slot")
	require.True(t, got.Paused, "replacing keeps a pause")

	// Another expression, another zone: the new next slot.
	s.Cron, s.NextAt = "0 10 * * *", epoch.Add(22*time.Hour)
	require.NoError(t, sc.PutSchedule(f.ctx, s))
	requireTime(t, epoch.Add(22*time.Hour), f.mustSchedule(sc, r).NextAt)
	s.Zone, s.NextAt = "America/New_York", epoch.Add(26*time.Hour)
	require.NoError(t, sc.PutSchedule(f.ctx, s))
	got = f.mustSchedule(sc, r)
	requireTime(t, epoch.Add(26*time.Hour), got.NextAt)
	require.Equal(t, "America/New_York", got.Zone)
	require.True(t, got.Paused)
	require.Len(t, f.listSchedules(sc, "", ""), 1)

	// A declared schedule is not replaced.
	f.register(sc, "wf", sched("wf", "t", "nightly", daily, epoch.Add(21*time.Hour)))
	over := sched("wf", "t", "nightly", "@hourly", epoch.Add(time.Hour))
	over.Input = []byte(`{}`)
	err := sc.PutSchedule(f.ctx, over)
	require.ErrorIs(t, err, store.ErrScheduleDeclared)
	got = f.mustSchedule(sc, ref("wf", "t", "nightly"))
	require.True(t, got.Declared)
	require.Equal(t, daily, got.Cron, "the declared schedule is unchanged")
	requireTime(t, epoch.Add(21*time.Hour), got.NextAt)
	require.Nil(t, got.Input)

	// The same name for another tenant is another schedule.
	require.NoError(t, sc.PutSchedule(f.ctx, sched("wf", "t2", "nightly", daily, epoch.Add(time.Hour))))
	require.False(t, f.mustSchedule(sc, ref("wf", "t2", "nightly")).Declared)
}

func testSchedulePause(f *fixture, sc store.Scheduler) {
	t := f.t
	f.register(sc, "wf", sched("wf", "t", "a", daily, epoch.Add(time.Hour)), sched("wf", "t", "b", daily, epoch.Add(2*time.Hour)))
	require.NoError(t, sc.PauseSchedule(f.ctx, ref("wf", "t", "a"), true, time.Time{}))
	require.True(t, f.mustSchedule(sc, ref("wf", "t", "a")).Paused)
	require.False(t, f.mustSchedule(sc, ref("wf", "t", "b")).Paused)

	f.clock.advance(3 * time.Hour)
	require.Equal(t, []store.ScheduleRef{ref("wf", "t", "b")}, f.due(sc, 10, "wf"), "a paused schedule is not due")

	// Resumed: due next at the given slot, the missed one does not fire.
	next := epoch.Add(25 * time.Hour)
	require.NoError(t, sc.PauseSchedule(f.ctx, ref("wf", "t", "a"), false, next))
	a := f.mustSchedule(sc, ref("wf", "t", "a"))
	require.False(t, a.Paused)
	requireTime(t, next, a.NextAt, "resumed at the given next slot")
	require.Equal(t, []store.ScheduleRef{ref("wf", "t", "b")}, f.due(sc, 10, "wf"))
	f.clock.advance(22 * time.Hour)
	require.Equal(t, []store.ScheduleRef{ref("wf", "t", "b"), ref("wf", "t", "a")}, f.due(sc, 10, "wf"))

	for _, paused := range []bool{true, false} {
		err := sc.PauseSchedule(f.ctx, ref("wf", "t", "ghost"), paused, next)
		require.ErrorIs(t, err, store.ErrScheduleNotFound)
		err = sc.PauseSchedule(f.ctx, ref("wf", "t2", "a"), paused, next)
		require.ErrorIs(t, err, store.ErrScheduleNotFound, "another tenant's")
	}
}

func testScheduleDelete(f *fixture, sc store.Scheduler) {
	t := f.t
	f.register(sc, "wf", sched("wf", "t", "a", daily, epoch))
	require.NoError(t, sc.PutSchedule(f.ctx, sched("wf", "t", "b", daily, epoch)))
	require.NoError(t, sc.DeleteSchedule(f.ctx, ref("wf", "t", "a")), "a declared schedule can be deleted")
	require.NoError(t, sc.DeleteSchedule(f.ctx, ref("wf", "t", "b")))
	require.Empty(t, f.listSchedules(sc, "", ""))
	require.Empty(t, f.due(sc, 10, "wf"))
	require.ErrorIs(t, sc.DeleteSchedule(f.ctx, ref("wf", "t", "a")), store.ErrScheduleNotFound, "deleted already")
	require.ErrorIs(t, sc.DeleteSchedule(f.ctx, ref("wf", "t", "ghost")), store.ErrScheduleNotFound)
	require.ErrorIs(t, sc.PauseSchedule(f.ctx, ref("wf", "t", "b"), true, time.Time{}), store.ErrScheduleNotFound)
}

func testScheduleDue(f *fixture, sc store.Scheduler) {
	t := f.t
	m := func(n int) time.Time { return epoch.Add(time.Duration(n) * time.Minute) }
	f.register(sc, "wf",
		sched("wf", "t", "a", daily, m(120)),
		sched("wf", "t", "b", daily, m(60)),
		sched("wf", "t", "later", daily, m(180)),
		sched("wf", "t", "paused", daily, m(0)),
	)
	require.NoError(t, sc.PauseSchedule(f.ctx, ref("wf", "t", "paused"), true, time.Time{}))
	f.register(sc, "wf2", sched("wf2", "t", "y", daily, m(30)))
	f.register(sc, "other", sched("other", "t", "x", daily, m(10)))

	require.Empty(t, f.due(sc, 10, "wf", "wf2"), "nothing is due yet")
	f.clock.advance(2 * time.Hour)
	want := []store.ScheduleRef{ref("wf2", "t", "y"), ref("wf", "t", "b"), ref("wf", "t", "a")}
	require.Equal(t, want, f.due(sc, 10, "wf", "wf2"), "due at or before now, earliest first, of the workflows listed")
	require.Equal(t, want, f.due(sc, 10, "wf2", "wf"), "a read changes nothing")
	require.Equal(t, want[:2], f.due(sc, 2, "wf", "wf2"), "limit")
	require.Equal(t, []store.ScheduleRef{ref("other", "t", "x")}, f.due(sc, 10, "other"))
	require.Empty(t, f.due(sc, 10, "nothing"))
	require.Empty(t, f.due(sc, 10), "no workflows, nothing due")

	list, _, err := sc.DueSchedules(f.ctx, []string{"wf"}, 1)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, daily, list[0].Cron, "a due schedule comes whole")
	require.True(t, list[0].Declared)
	requireTime(t, m(60), list[0].NextAt)
}

func testScheduleFire(f *fixture, sc store.Scheduler) {
	t := f.t
	slot := epoch.Add(time.Hour)
	f.register(sc, "wf", sched("wf", "t", "nightly", daily, slot))
	f.clock.advance(time.Hour)
	due, _, err := sc.DueSchedules(f.ctx, []string{"wf"}, 10)
	require.NoError(t, err)
	require.Len(t, due, 1)
	requireTime(t, slot, due[0].NextAt)

	run := slotRun("nightly", slot)
	fr := firing("nightly", due[0].NextAt, slot.Add(24*time.Hour), run)
	require.True(t, f.fire(sc, fr))
	require.True(t, fr.Runs[0].Existing.IsZero(), "a new slot creates its run")
	got := f.run(run.ID)
	require.Equal(t, store.RunRunning, got.Status)
	require.Equal(t, store.ScheduleKey("nightly", slot), got.Key, "the run carries the slot's key")
	require.Equal(t, "schedule:nightly:2026-03-01T13:00:00Z", got.Key)
	require.Equal(t, "t", got.Tenant)
	ct := f.claimOne()
	require.Equal(t, run.ID, ct.RunID, "the run's roots are queued")

	s := f.mustSchedule(sc, ref("wf", "t", "nightly"))
	requireTime(t, slot.Add(24*time.Hour), s.NextAt, "moved to the next slot")
	requireTime(t, slot, s.LastAt)
	require.Equal(t, run.ID, s.LastRun)
	require.Empty(t, f.due(sc, 10, "wf"), "no longer due")
}

func testScheduleFireOnce(f *fixture, sc store.Scheduler) {
	t := f.t
	slot := epoch.Add(time.Hour)
	f.register(sc, "wf", sched("wf", "t", "nightly", daily, slot))
	f.clock.advance(time.Hour)
	first := slotRun("nightly", slot)
	require.True(t, f.fire(sc, firing("nightly", slot, slot.Add(24*time.Hour), first)))

	second := slotRun("nightly", slot)
	require.False(t, f.fire(sc, firing("nightly", slot, slot.Add(24*time.Hour), second)), "no longer due at that slot")
	f.requireNoRun(second.ID, "a firing that does not fire creates nothing")
	other := newRun("wf", "t", task("a"))
	other.Key = store.ScheduleKey("nightly", slot.Add(time.Minute))
	require.False(t, f.fire(sc, firing("nightly", slot, slot.Add(48*time.Hour), other)), "whatever the runs")
	f.requireNoRun(other.ID)
	s := f.mustSchedule(sc, ref("wf", "t", "nightly"))
	requireTime(t, slot.Add(24*time.Hour), s.NextAt, "unchanged by a firing that does not fire")
	require.Equal(t, first.ID, s.LastRun)
	require.Len(t, f.claim(10), 1, "one run")
}

func testScheduleFireKeyTaken(f *fixture, sc store.Scheduler) {
	t := f.t
	slot := epoch.Add(time.Hour)
	f.register(sc, "wf", sched("wf", "t", "nightly", daily, slot))
	earlier := f.createOne(slotRun("nightly", slot)) // by a worker whose firing failed, say
	f.clock.advance(time.Hour)

	run := slotRun("nightly", slot)
	fr := firing("nightly", slot, slot.Add(24*time.Hour), run)
	require.True(t, f.fire(sc, fr), "the schedule moves on")
	require.Equal(t, earlier.ID, fr.Runs[0].Existing, "the slot's run exists already")
	f.requireNoRun(run.ID, "no second run for the slot")
	s := f.mustSchedule(sc, ref("wf", "t", "nightly"))
	requireTime(t, slot.Add(24*time.Hour), s.NextAt)
	requireTime(t, slot, s.LastAt)
	require.Equal(t, earlier.ID, s.LastRun, "the slot's run is the one that exists")
	require.Len(t, f.claim(10), 1)
}

func testScheduleFirePausedOrGone(f *fixture, sc store.Scheduler) {
	t := f.t
	slot := epoch.Add(time.Hour)
	f.register(sc, "wf", sched("wf", "t", "nightly", daily, slot))
	f.clock.advance(time.Hour)
	require.NoError(t, sc.PauseSchedule(f.ctx, ref("wf", "t", "nightly"), true, time.Time{}))
	run := slotRun("nightly", slot)
	require.False(t, f.fire(sc, firing("nightly", slot, slot.Add(24*time.Hour), run)), "a paused schedule does not fire")
	f.requireNoRun(run.ID)
	s := f.mustSchedule(sc, ref("wf", "t", "nightly"))
	requireTime(t, slot, s.NextAt)
	require.True(t, s.LastRun.IsZero())

	ghost := slotRun("ghost", slot)
	require.False(t, f.fire(sc, firing("ghost", slot, slot.Add(24*time.Hour), ghost)), "an unknown schedule does not fire")
	f.requireNoRun(ghost.ID)

	require.NoError(t, sc.DeleteSchedule(f.ctx, ref("wf", "t", "nightly")))
	run = slotRun("nightly", slot)
	require.False(t, f.fire(sc, firing("nightly", slot, slot.Add(24*time.Hour), run)), "a deleted schedule does not fire")
	f.requireNoRun(run.ID)
	require.Empty(t, f.claim(10))
}

func testScheduleFireInvalid(f *fixture, sc store.Scheduler) {
	t := f.t
	slot := epoch.Add(time.Hour)
	f.register(sc, "wf", sched("wf", "t", "nightly", daily, slot))
	f.clock.advance(time.Hour)
	good := slotRun("nightly", slot.Add(-24*time.Hour))
	bad := slotRun("nightly", slot)
	bad.Tenant = " t"
	ok, err := sc.FireSchedule(f.ctx, firing("nightly", slot, slot.Add(24*time.Hour), good, bad))
	require.ErrorIs(t, err, store.ErrInvalidRun)
	require.ErrorIs(t, err, store.ErrInvalidTenant)
	require.False(t, ok)
	f.requireNoRun(good.ID, "all or nothing")
	f.requireNoRun(bad.ID)
	s := f.mustSchedule(sc, ref("wf", "t", "nightly"))
	requireTime(t, slot, s.NextAt, "the schedule is left due")
	require.True(t, s.LastAt.IsZero())
	require.True(t, s.LastRun.IsZero())
	require.Equal(t, []store.ScheduleRef{ref("wf", "t", "nightly")}, f.due(sc, 10, "wf"))

	cyclic := slotRun("nightly", slot)
	cyclic.Tasks = []store.NewTask{task("a", "b"), task("b", "a")}
	_, err = sc.FireSchedule(f.ctx, firing("nightly", slot, slot.Add(24*time.Hour), cyclic))
	require.ErrorIs(t, err, store.ErrInvalidRun)
	f.requireNoRun(cyclic.ID)
	requireTime(t, slot, f.mustSchedule(sc, ref("wf", "t", "nightly")).NextAt)

	// The schedule still fires with good runs.
	require.True(t, f.fire(sc, firing("nightly", slot, slot.Add(24*time.Hour), slotRun("nightly", slot))))
}

func testScheduleFireManyOrNone(f *fixture, sc store.Scheduler) {
	t := f.t
	h := func(n int) time.Time { return epoch.Add(time.Duration(n) * time.Hour) }
	s := sched("wf", "t", "hourly", "@hourly", h(1))
	s.Catchup = store.CatchupAll
	f.register(sc, "wf", s)
	f.clock.advance(3*time.Hour + 30*time.Minute)

	// Three missed slots, each its run, in one firing.
	runs := []store.NewRun{slotRun("hourly", h(1)), slotRun("hourly", h(2)), slotRun("hourly", h(3))}
	fr := firing("hourly", h(1), h(4), runs...)
	fr.Last = h(3)
	require.True(t, f.fire(sc, fr))
	for i, r := range runs {
		require.Equal(t, store.ScheduleKey("hourly", h(i+1)), f.run(r.ID).Key)
	}
	got := f.mustSchedule(sc, ref("wf", "t", "hourly"))
	requireTime(t, h(4), got.NextAt)
	requireTime(t, h(3), got.LastAt, "the latest slot fired")
	require.Equal(t, runs[2].ID, got.LastRun, "the latest slot's run")
	require.Len(t, f.claim(10), 3)

	// A firing of no slot (missed, too late) only moves the schedule on.
	f.clock.advance(2 * time.Hour)
	require.True(t, f.fire(sc, store.ScheduleFiring{ScheduleRef: ref("wf", "t", "hourly"), Due: h(4), Next: h(6)}))
	got = f.mustSchedule(sc, ref("wf", "t", "hourly"))
	requireTime(t, h(6), got.NextAt)
	requireTime(t, h(3), got.LastAt, "no slot fired: the last one stays")
	require.Equal(t, runs[2].ID, got.LastRun)
	require.Empty(t, f.claim(10))
}

func testScheduleConcurrentFires(f *fixture, sc store.Scheduler) {
	t := f.t
	const workers = 8
	slot := epoch.Add(time.Hour)
	f.register(sc, "wf", sched("wf", "t", "nightly", daily, slot))
	f.clock.advance(time.Hour)

	runs := make([]store.NewRun, workers)
	for i := range runs {
		runs[i] = slotRun("nightly", slot) // each its id, one key
	}
	fired, errs := make([]bool, workers), make([]error, workers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fired[i], errs[i] = sc.FireSchedule(f.ctx, firing("nightly", slot, slot.Add(24*time.Hour), runs[i]))
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i := range workers {
		require.NoError(t, errs[i], "worker %d", i)
		if fired[i] {
			require.Equal(t, -1, winner, "two workers fired the slot: %d and %d", winner, i)
			winner = i
		}
	}
	require.NotEqual(t, -1, winner, "one worker fires the slot")

	s := f.mustSchedule(sc, ref("wf", "t", "nightly"))
	require.Equal(t, runs[winner].ID, s.LastRun)
	requireTime(t, slot.Add(24*time.Hour), s.NextAt)
	require.Equal(t, store.ScheduleKey("nightly", slot), f.run(s.LastRun).Key)
	for i, r := range runs {
		if i != winner {
			f.requireNoRun(r.ID, "worker %d's run", i)
		}
	}
	require.Len(t, f.claim(10), 1, "one run for the slot")
}

func testScheduleNow(f *fixture, sc store.Scheduler) {
	t := f.t
	now, err := sc.Now(f.ctx)
	require.NoError(t, err)
	requireTime(t, epoch, now)
	f.clock.advance(90 * time.Minute)
	now, err = sc.Now(f.ctx)
	require.NoError(t, err)
	requireTime(t, epoch.Add(90*time.Minute), now)
}
