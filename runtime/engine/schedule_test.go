package engine_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dagtest"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// Schedules at the engine level, on dagtest's fake clock: declared
// schedules fire at their slots, each slot's run keyed by it; catch-up
// policies; pause and resume; schedules created at run time; time zones
// and daylight saving time. A Postgres test runs several workers on one
// fake clock: each slot starts exactly one run.

// reportDef is a one-step workflow whose input is the slot's Unix time,
// with the declared schedules given.
func reportDef(scheds ...engine.ScheduleDef) *engine.Definition {
	return &engine.Definition{
		Name:      "report",
		Steps:     []engine.Step{{Name: "build", Run: fn(func(_ context.Context, in int, _ []string) (string, error) { return fmt.Sprint(in), nil })}},
		Schedules: scheds,
	}
}

// slotInput builds a run's input from its slot: its Unix time.
func slotInput(_ context.Context, slot time.Time) ([]byte, error) { return engine.Encode(slot.Unix()) }

func nightly(catchup store.Catchup) engine.ScheduleDef {
	return engine.ScheduleDef{Name: "nightly", Cron: "0 3 * * *", Catchup: catchup, Input: slotInput}
}

// scheduledRuns returns the runs of workflow report, oldest first, with
// their inputs as times.
func scheduledRuns(t *testing.T, h *dagtest.Harness) []store.RunSummary {
	t.Helper()
	page, err := h.Store.ListRuns(context.Background(), store.RunFilter{Workflow: "report", Limit: 100})
	require.NoError(t, err)
	runs := page.Runs
	slices.Reverse(runs)
	return runs
}

// slotsOf returns the slots the runs were started for, from their keys.
func slotsOf(t *testing.T, h *dagtest.Harness, runs []store.RunSummary) []string {
	t.Helper()
	var out []string
	for _, r := range runs {
		run, err := h.Store.GetRun(context.Background(), r.ID)
		require.NoError(t, err)
		out = append(out, run.Key)
	}
	return out
}

func day(d, h int) time.Time { return time.Date(2026, time.January, d, h, 0, 0, 0, time.UTC) }

func TestScheduleFiresAtItsSlots(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, reportDef(nightly("")))
	h.RunUntilIdle(ctx) // registers the schedule
	scheds, err := h.Engine.Schedules(ctx, "", "")
	require.NoError(t, err)
	require.Len(t, scheds, 1)
	s := scheds[0]
	require.Equal(t, store.ScheduleRef{Workflow: "report", Tenant: engine.DefaultScheduleTenant, Name: "nightly"}, s.ScheduleRef)
	require.Equal(t, store.CatchupLatest, s.Catchup)
	require.True(t, s.Declared)
	require.Equal(t, day(1, 3), s.NextAt, "a new schedule starts at its next slot")

	h.Advance(ctx, 3*time.Hour-time.Second)
	require.Empty(t, scheduledRuns(t, h), "not yet")
	h.Advance(ctx, time.Second)
	runs := scheduledRuns(t, h)
	require.Len(t, runs, 1)
	require.Equal(t, store.RunCompleted, runs[0].Status)
	require.Equal(t, engine.DefaultScheduleTenant, runs[0].Tenant)
	require.Equal(t, []string{"schedule:nightly:2026-01-01T03:00:00Z"}, slotsOf(t, h, runs))
	res := result(t, h, runs[0].ID)
	require.Equal(t, fmt.Sprint(day(1, 3).Unix()), output(t, res, "build"), "the func got the slot's time")

	scheds, err = h.Engine.Schedules(ctx, "report", "")
	require.NoError(t, err)
	require.Equal(t, day(2, 3), scheds[0].NextAt)
	require.Equal(t, day(1, 3), scheds[0].LastAt)
	require.Equal(t, runs[0].ID, scheds[0].LastRun)

	h.Advance(ctx, 24*time.Hour)
	require.Len(t, scheduledRuns(t, h), 2)
}

func TestScheduleCatchup(t *testing.T) {
	for _, tc := range []struct {
		catchup store.Catchup
		late    time.Duration // how far past the third missed slot the clock lands
		want    []string
	}{
		{store.CatchupLatest, time.Hour, []string{"schedule:nightly:2026-01-03T03:00:00Z"}},
		{store.CatchupAll, time.Hour, []string{"schedule:nightly:2026-01-01T03:00:00Z", "schedule:nightly:2026-01-02T03:00:00Z", "schedule:nightly:2026-01-03T03:00:00Z"}},
		{store.CatchupNone, time.Hour, nil},
		{store.CatchupNone, 30 * time.Second, []string{"schedule:nightly:2026-01-03T03:00:00Z"}},
	} {
		t.Run(fmt.Sprintf("%s/%s", tc.catchup, tc.late), func(t *testing.T) {
			ctx := context.Background()
			h := newHarness(t, reportDef(nightly(tc.catchup)))
			h.RunUntilIdle(ctx)
			// Nothing ran for two days and a bit: three slots came due.
			h.Clock.Advance(2*24*time.Hour + 3*time.Hour + tc.late)
			h.RunUntilIdle(ctx)
			require.Equal(t, tc.want, slotsOf(t, h, scheduledRuns(t, h)))
			scheds, err := h.Engine.Schedules(ctx, "report", "")
			require.NoError(t, err)
			require.Equal(t, day(4, 3), scheds[0].NextAt, "the missed slots are behind it either way")
		})
	}
}

func TestSchedulePauseResumeDelete(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, reportDef(nightly(store.CatchupAll)))
	h.RunUntilIdle(ctx)
	ref := store.ScheduleRef{Workflow: "report", Tenant: engine.DefaultScheduleTenant, Name: "nightly"}
	require.NoError(t, h.Engine.PauseSchedule(ctx, ref))
	h.Advance(ctx, 3*24*time.Hour)
	require.Empty(t, scheduledRuns(t, h), "a paused schedule fires nothing")
	require.NoError(t, h.Engine.ResumeSchedule(ctx, ref))
	h.RunUntilIdle(ctx)
	require.Empty(t, scheduledRuns(t, h), "slots missed while paused do not fire, even with catchup=all")
	scheds, err := h.Engine.Schedules(ctx, "report", "")
	require.NoError(t, err)
	require.False(t, scheds[0].Paused)
	require.Equal(t, day(4, 3), scheds[0].NextAt)
	h.Advance(ctx, 3*time.Hour)
	require.Len(t, scheduledRuns(t, h), 1)

	missing := ref
	missing.Name = "weekly"
	require.ErrorIs(t, h.Engine.PauseSchedule(ctx, missing), store.ErrScheduleNotFound)
	require.ErrorIs(t, h.Engine.ResumeSchedule(ctx, missing), store.ErrScheduleNotFound)
	require.ErrorIs(t, h.Engine.DeleteSchedule(ctx, missing), store.ErrScheduleNotFound)
	require.NoError(t, h.Engine.DeleteSchedule(ctx, ref))
	scheds, err = h.Engine.Schedules(ctx, "", "")
	require.NoError(t, err)
	require.Empty(t, scheds)
}

func TestScheduleCreatedAtRunTime(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, reportDef())
	spec := engine.ScheduleSpec{Name: "hourly-acme", Tenant: "acme", Cron: "0 * * * *", Input: 42}
	require.NoError(t, h.Engine.CreateSchedule(ctx, "report", spec))
	h.Advance(ctx, 2*time.Hour)
	runs := scheduledRuns(t, h)
	require.Len(t, runs, 1, "catchup=latest by default: the clock jumped over two slots")
	require.Equal(t, "acme", runs[0].Tenant)
	require.Equal(t, "42", output(t, result(t, h, runs[0].ID), "build"), "a created schedule's runs take its input")

	// Replacing it keeps its next slot when the expression is the same.
	spec.Input = 43
	require.NoError(t, h.Engine.CreateSchedule(ctx, "report", spec))
	h.Advance(ctx, time.Hour)
	runs = scheduledRuns(t, h)
	require.Len(t, runs, 2)
	require.Equal(t, "43", output(t, result(t, h, runs[1].ID), "build"))

	for _, bad := range []struct {
		spec engine.ScheduleSpec
		want string
	}{
		{engine.ScheduleSpec{Name: "x", Tenant: "acme", Cron: "0 25 * * *", Input: 1}, `cron "0 25 * * *"`},
		{engine.ScheduleSpec{Name: "x", Tenant: "acme", Cron: "@every 1h", Input: 1}, "@every has no fixed slots"},
		{engine.ScheduleSpec{Name: "x", Tenant: "acme", Cron: "0 3 * * *", Zone: "Mars/Olympus", Input: 1}, `unknown time zone "Mars/Olympus"`},
		{engine.ScheduleSpec{Name: "x", Tenant: "acme", Cron: "0 3 * * *", Catchup: "some", Input: 1}, `catchup "some": want latest, all or none`},
		{engine.ScheduleSpec{Name: "x", Tenant: " ", Cron: "0 3 * * *", Input: 1}, "tenant"},
		{engine.ScheduleSpec{Name: "", Tenant: "acme", Cron: "0 3 * * *", Input: 1}, "a schedule needs a name"},
		{engine.ScheduleSpec{Name: "x", Tenant: "acme", Cron: "0 3 * * *"}, "nil workflow input"},
	} {
		require.ErrorContains(t, h.Engine.CreateSchedule(ctx, "report", bad.spec), bad.want)
	}
	require.ErrorIs(t, h.Engine.CreateSchedule(ctx, "nope", spec), engine.ErrUnknownWorkflow)
}

func TestDeclaredScheduleCannotBeReplaced(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, reportDef(nightly("")))
	h.RunUntilIdle(ctx)
	err := h.Engine.CreateSchedule(ctx, "report", engine.ScheduleSpec{Name: "nightly", Tenant: engine.DefaultScheduleTenant, Cron: "0 4 * * *", Input: 1})
	require.ErrorIs(t, err, store.ErrScheduleDeclared)
}

// TestScheduleTimeZones reads expressions in a zone with daylight saving
// time, as package cronexpr documents: 02:30 does not exist on the day
// New York's clocks go forward, and 01:30 happens twice on the day they go
// back; an hourly schedule fires every real hour through both.
func TestScheduleTimeZones(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	for _, tc := range []struct {
		name, cron string
		from, to   time.Time
		want       []string // the slots' wall times in New York
	}{
		{"spring forward", "30 2 * * *", time.Date(2026, 3, 7, 0, 0, 0, 0, ny), time.Date(2026, 3, 10, 0, 0, 0, 0, ny),
			[]string{"03-07 02:30 EST", "03-09 02:30 EDT"}},
		{"fall back", "30 1 * * *", time.Date(2026, 10, 31, 0, 0, 0, 0, ny), time.Date(2026, 11, 2, 0, 0, 0, 0, ny),
			[]string{"10-31 01:30 EDT", "11-01 01:30 EDT", "11-01 01:30 EST"}},
		{"hourly through fall back", "0 * * * *", time.Date(2026, 11, 1, 0, 30, 0, 0, ny), time.Date(2026, 11, 1, 3, 30, 0, 0, ny),
			[]string{"11-01 01:00 EDT", "11-01 01:00 EST", "11-01 02:00 EST", "11-01 03:00 EST"}},
		{"hourly through spring forward", "0 * * * *", time.Date(2026, 3, 8, 0, 30, 0, 0, ny), time.Date(2026, 3, 8, 4, 30, 0, 0, ny),
			[]string{"03-08 01:00 EST", "03-08 03:00 EDT", "03-08 04:00 EDT"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clock := dagtest.NewClock(tc.from)
			h := dagtest.NewWithClock(t, clock)
			require.NoError(t, h.Engine.Register(reportDef(engine.ScheduleDef{
				Name: "ny", Cron: tc.cron, Zone: "America/New_York", Catchup: store.CatchupAll, Input: slotInput,
			})))
			h.RunUntilIdle(ctx)
			for clock.Now().Before(tc.to) { // minute by minute, as workers would poll
				h.Advance(ctx, time.Minute)
			}
			var got []string
			for _, r := range scheduledRuns(t, h) {
				res := result(t, h, r.ID)
				var unix int64
				_, err := fmt.Sscan(output(t, res, "build"), &unix)
				require.NoError(t, err)
				got = append(got, time.Unix(unix, 0).In(ny).Format("01-02 15:04 MST"))
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// TestScheduleSlotsStartOnceAcrossWorkers runs four Postgres workers on
// one fake clock that moves a minute at a time, with a schedule due every
// minute; one worker stops half-way (a leader failover for whoever led).
// Every slot starts exactly one run.
func TestScheduleSlotsStartOnceAcrossWorkers(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Schema(t)
	require.NoError(t, pgstore.Migrate(ctx, pgtest.Pool(t, schema, 2)))
	start := time.Date(2026, 6, 1, 12, 0, 30, 0, time.UTC)
	var mu sync.Mutex
	now := start
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	def := func() *engine.Definition {
		return reportDef(engine.ScheduleDef{Name: "minutely", Cron: "* * * * *", Catchup: store.CatchupAll, Input: slotInput})
	}
	var workers []*engine.Engine
	for i := range 4 {
		st, err := pgstore.New(ctx, pgtest.Pool(t, schema, 4), &pgstore.Config{Now: clock})
		require.NoError(t, err)
		e, err := engine.New(st, &engine.Config{
			WorkerID: fmt.Sprintf("w%d", i), Concurrency: 4, PollInterval: 5 * time.Millisecond,
			SchedulePollInterval: time.Millisecond, Lease: 2 * time.Second, HeartbeatInterval: 20 * time.Millisecond,
			Retention: -1, // the fake clock is months behind: keep its runs
		})
		require.NoError(t, err)
		require.NoError(t, e.Register(def()))
		require.NoError(t, e.Start(ctx))
		t.Cleanup(func() { _ = e.Stop(context.Background()) })
		workers = append(workers, e)
	}
	reader := workers[3].Store().(*pgstore.Store)
	const minutes = 30
	for m := 1; m <= minutes; m++ {
		mu.Lock()
		now = now.Add(time.Minute)
		mu.Unlock()
		if m == minutes/2 {
			stopCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			require.NoError(t, workers[0].Stop(stopCtx))
			cancel()
		}
		want := start.Truncate(time.Minute).Add(time.Duration(m) * time.Minute)
		require.Eventually(t, func() bool {
			s, err := reader.ListSchedules(ctx, "report", "")
			return err == nil && len(s) == 1 && s[0].LastAt.Equal(want)
		}, 20*time.Second, time.Millisecond, "minute %d", m)
	}
	page, err := reader.ListRuns(ctx, store.RunFilter{Workflow: "report", Limit: 1000})
	require.NoError(t, err)
	keys := map[string]int{}
	for _, r := range page.Runs {
		run, err := reader.GetRun(ctx, r.ID)
		require.NoError(t, err)
		keys[run.Key]++
	}
	require.Len(t, keys, minutes, "one run per slot")
	for k, n := range keys {
		require.Equal(t, 1, n, "slot %s", k)
	}
}
