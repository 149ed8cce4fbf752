package storetest

import (
	"fmt"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// flowControlTests hold stores to the order of admission: tenant weights
// and run priorities in the fair queue, and rate limits before it
// (store.FlowControl).
var flowControlTests = []struct {
	name string
	fn   func(*fixture, store.FlowControl)
}{
	{"WeightsShareTheQueue", testWeightsShareTheQueue},
	{"WeightChangeTakesTheNextBlock", testWeightChange},
	{"WeightedClaimSaysWhetherTheTenantHasMoreQueued", testWeightedTenantQueued},
	{"BadWeightsAreRefused", testBadWeights},
	{"PriorityOrdersATenantsOwnTasks", testPriorityOrdersATenant},
	{"PriorityKeepsTheTurns", testPriorityKeepsTheTurns},
	{"PriorityWithWeights", testPriorityWithWeights},
	{"RateLimitAdmitsByTokens", testRateLimitAdmitsByTokens},
	{"RateLimitStraightIn", testRateLimitStraightIn},
	{"RateLimitNotPutYetWaits", testRateLimitNotPutYet},
	{"RateLimitKeysApart", testRateLimitKeysApart},
	{"RateLimitNoHeadOfLine", testRateLimitNoHeadOfLine},
	{"RateLimitWaitSaysWhy", testRateLimitWaitSaysWhy},
	{"RateLimitCancelFreesTheWait", testRateLimitCancel},
	{"RateLimitPriority", testRateLimitPriority},
	{"RateLimitRetryWaitsAgain", testRateLimitRetry},
	{"RateLimitLongBacklog", testRateLimitLongBacklog},
	{"RateLimitOfAnAdmittedRun", testContinueAdmittedRated},
	{"BadRateLimitsAreRefused", testBadRateLimits},
}

// tenantsOf returns the tenants of claimed, in claim order.
func tenantsOf(claimed []store.ClaimedTask) string {
	var b strings.Builder
	for _, c := range claimed {
		b.WriteString(c.Tenant)
	}
	return b.String()
}

// backlog creates n one-task runs of tenant, each with priority prio.
func (f *fixture) backlog(tenant string, n, prio int) []store.NewRun {
	f.t.Helper()
	runs := make([]store.NewRun, n)
	for i := range runs {
		runs[i] = newRun("wf", tenant, task("a"))
		runs[i].Priority = prio
	}
	f.create(runs...)
	return runs
}

// claimEach claims n tasks one claim at a time.
func (f *fixture) claimEach(n int) []store.ClaimedTask {
	f.t.Helper()
	var out []store.ClaimedTask
	for range n {
		out = append(out, f.claim(1)...)
	}
	return out
}

func testWeightsShareTheQueue(f *fixture, fc store.FlowControl) {
	t := f.t
	require.NoError(t, fc.SetTenantWeight(f.ctx, "A", 3))
	f.backlog("A", 30, 0)
	f.backlog("B", 30, 0)
	// Each block holds three of A's places and one of B's: by claims of
	// one or of many, the shares are 3:1 while both have work.
	got := tenantsOf(f.claimEach(8))
	require.Equal(t, 6, strings.Count(got, "A"), "claims %s", got)
	require.Equal(t, 2, strings.Count(got, "B"), "claims %s", got)
	got = tenantsOf(f.claim(16))
	require.Equal(t, 12, strings.Count(got, "A"), "claims %s", got)
	require.Equal(t, 4, strings.Count(got, "B"), "claims %s", got)

	weights, err := fc.TenantWeights(f.ctx)
	require.NoError(t, err)
	require.Equal(t, []store.TenantWeight{{Tenant: "A", Weight: 3}}, weights)
}

func testWeightChange(f *fixture, fc store.FlowControl) {
	t := f.t
	require.NoError(t, fc.SetTenantWeight(f.ctx, "A", 2))
	f.backlog("A", 3, 0) // two places of a block, then one of the next
	require.NoError(t, fc.SetTenantWeight(f.ctx, "A", 1))
	f.backlog("A", 2, 0) // the next blocks, one place each
	f.backlog("B", 4, 0)
	got := tenantsOf(f.claimEach(9))
	// A's first block holds two, then one a block.
	require.Equal(t, "AABABABAB", got)
	weights, err := fc.TenantWeights(f.ctx)
	require.NoError(t, err)
	require.Empty(t, weights, "weight 1 is the default: not listed")
}

func testWeightedTenantQueued(f *fixture, fc store.FlowControl) {
	t := f.t
	require.NoError(t, fc.SetTenantWeight(f.ctx, "A", 2))
	f.backlog("A", 4, 0) // two blocks, two places each
	var got []bool
	for _, c := range f.claimEach(4) {
		got = append(got, c.TenantQueued)
	}
	// The tasks of A's last block have no later block of A's behind them.
	require.Equal(t, []bool{true, true, false, false}, got)
}

func testBadWeights(f *fixture, fc store.FlowControl) {
	t := f.t
	for _, w := range []int{0, -1, store.MaxWeight + 1} {
		err := fc.SetTenantWeight(f.ctx, "A", w)
		require.ErrorContains(t, err, fmt.Sprintf("a weight is 1 to %d", store.MaxWeight), "weight %d", w)
	}
	require.ErrorIs(t, fc.SetTenantWeight(f.ctx, " bad", 2), store.ErrInvalidTenant)
}

func testPriorityOrdersATenant(f *fixture, fc store.FlowControl) {
	t := f.t
	bulk := f.backlog("A", 5, 0)
	urgent := f.backlog("A", 2, 5)
	got := f.claimEach(2)
	require.Equal(t, []dag.RunID{urgent[0].ID, urgent[1].ID}, []dag.RunID{got[0].RunID, got[1].RunID},
		"the urgent runs first, in order")
	// The bulk follows. The entries whose places went to the urgent ones
	// took the urgent ones' places: the order of one priority is the
	// order of its places.
	rest := f.claim(10)
	require.Len(t, rest, 5)
	want := map[dag.RunID]bool{}
	for _, r := range bulk {
		want[r.ID] = true
	}
	for _, c := range rest {
		require.True(t, want[c.RunID])
		delete(want, c.RunID)
	}
	require.Equal(t, bulk[2].ID, rest[0].RunID, "the first place left")
	require.Empty(t, f.claim(10))
}

func testPriorityKeepsTheTurns(f *fixture, fc store.FlowControl) {
	t := f.t
	f.backlog("A", 4, 0)
	f.backlog("B", 4, 0)
	urgent := f.backlog("A", 3, 9)
	// A's places keep their turns with B's; the urgent runs take A's
	// first three places.
	got := f.claimEach(8)
	require.Equal(t, "ABABABAB", tenantsOf(got))
	require.Equal(t, urgent[0].ID, got[0].RunID)
	require.Equal(t, urgent[1].ID, got[2].RunID)
	require.Equal(t, urgent[2].ID, got[4].RunID)
	require.Equal(t, "AAA", tenantsOf(f.claim(10)), "A's bulk")
}

func testPriorityWithWeights(f *fixture, fc store.FlowControl) {
	t := f.t
	require.NoError(t, fc.SetTenantWeight(f.ctx, "A", 2))
	f.backlog("A", 6, 1)
	f.backlog("B", 6, 0)
	urgent := f.backlog("A", 2, 7)
	got := f.claim(6)
	require.Equal(t, 4, strings.Count(tenantsOf(got), "A"), "claims %s", tenantsOf(got))
	// One claim starts its tasks at once: the urgent ones are among A's.
	var claimedA []dag.RunID
	for _, c := range got {
		if c.Tenant == "A" {
			claimedA = append(claimedA, c.RunID)
		}
	}
	require.Contains(t, claimedA, urgent[0].ID)
	require.Contains(t, claimedA, urgent[1].ID)
}

// rated returns a one-task run of tenant whose task takes units of limit
// for key.
func rated(tenant, limit, key string, units int) store.NewRun {
	tk := task("a")
	tk.RateLimit, tk.RateKey, tk.RateUnits = limit, key, units
	return newRun("wf", tenant, tk)
}

// admit fires what is due: the buckets' admissions among the timers.
func (f *fixture) admit() int {
	f.t.Helper()
	n, err := f.st.FireTimers(f.ctx, 1000)
	require.NoError(f.t, err)
	return n
}

func testRateLimitAdmitsByTokens(f *fixture, fc store.FlowControl) {
	t := f.t
	require.NoError(t, fc.PutRateLimits(f.ctx, []store.RateLimit{{Name: "stripe", Rate: 2, Burst: 3}}))
	runs := make([]store.NewRun, 10)
	for i := range runs {
		runs[i] = rated("A", "stripe", "", 1)
	}
	f.create(runs...)
	// A full bucket, burst 3: the first three go straight in, as they
	// came; the others wait for tokens, out of the fair queue.
	got := f.claim(10)
	require.Len(t, got, 3)
	for i, c := range got {
		require.Equal(t, runs[i].ID, c.RunID, "let in as they came")
	}
	for _, r := range runs[3:] {
		require.Equal(t, store.TaskQueued, f.status(r.ID, "a"))
	}
	next, ok, err := f.st.NextTimer(f.ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.False(t, next.After(f.clock.Now()), "the bucket is due at once")
	require.Zero(t, f.admit(), "no token left")
	next, ok, err = f.st.NextTimer(f.ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 500*time.Millisecond, next.Sub(f.clock.Now()), "the next token in 1/rate")

	// 2 tokens a second: a second later, two more start.
	f.clock.advance(time.Second)
	require.Equal(t, 2, f.admit())
	require.Len(t, f.claim(10), 2)
	// Tokens do not pile up past the burst while the bucket is idle.
	f.clock.advance(time.Hour)
	require.Equal(t, 3, f.admit())
	require.Len(t, f.claim(10), 3)
	f.clock.advance(time.Hour)
	require.Equal(t, 2, f.admit(), "the last two")
	require.Len(t, f.claim(10), 2)
	_, ok, err = f.st.NextTimer(f.ctx)
	require.NoError(t, err)
	require.False(t, ok, "nothing waits: the bucket is not due")
}

// testRateLimitStraightIn: a task whose bucket has room for it, beyond
// the units its entries in the fair queue hold, and for which no task
// waits, goes straight into the fair queue, with no admission; one the
// bucket has no room for waits, and those after it too, until an
// admission lets them in.
func testRateLimitStraightIn(f *fixture, fc store.FlowControl) {
	t := f.t
	require.NoError(t, fc.PutRateLimits(f.ctx, []store.RateLimit{{Name: "stripe", Rate: 1, Burst: 3}}))
	first := rated("A", "stripe", "acct", 1)
	f.create(first)
	require.Len(t, f.claim(10), 1, "a key's first task: its bucket is made full")

	// Two tokens left: the next two go straight in, the third waits.
	second, third, fourth := rated("A", "stripe", "acct", 1), rated("A", "stripe", "acct", 1), rated("A", "stripe", "acct", 1)
	f.create(second)
	f.create(third)
	f.create(fourth)
	got := f.claim(10)
	require.Len(t, got, 2, "the bucket's two tokens, with no admission")
	require.ElementsMatch(t, []dag.RunID{second.ID, third.ID}, []dag.RunID{got[0].RunID, got[1].RunID})
	require.Equal(t, store.TaskQueued, f.status(fourth.ID, "a"))
	fifth := rated("A", "stripe", "acct", 1)
	f.clock.advance(time.Second) // a token: the fourth waits ahead of it
	f.create(fifth)
	require.Empty(t, f.claim(10), "a task does not pass one waiting for its bucket")
	require.Equal(t, 1, f.admit())
	got = f.claim(10)
	require.Len(t, got, 1)
	require.Equal(t, fourth.ID, got[0].RunID, "the waiting one first")

	// An entry let in holds its units until it is claimed: of two tokens,
	// the admitted fifth holds one, the sixth takes the other straight in,
	// and the seventh waits.
	f.clock.advance(2 * time.Second)
	require.Equal(t, 1, f.admit())
	sixth, seventh := rated("A", "stripe", "acct", 1), rated("A", "stripe", "acct", 1)
	f.create(sixth)
	f.create(seventh)
	got = f.claim(10)
	require.Len(t, got, 2, "fifth, admitted, and sixth, straight in")
	require.ElementsMatch(t, []dag.RunID{fifth.ID, sixth.ID}, []dag.RunID{got[0].RunID, got[1].RunID})
	require.Equal(t, store.TaskQueued, f.status(seventh.ID, "a"))
}

// testRateLimitNotPutYet: a task of a limit that is not in the store yet
// (the engine's put of it failed, or a store made the run without an
// engine) waits for it, in a schema that has no rate limit at all too: it
// is never let in unlimited.
func testRateLimitNotPutYet(f *fixture, fc store.FlowControl) {
	t := f.t
	first, second := rated("A", "stripe", "acct", 1), rated("A", "stripe", "acct", 1)
	f.create(first, second)
	require.Empty(t, f.claim(10), "no limit, no token")
	require.Equal(t, store.TaskQueued, f.status(first.ID, "a"))
	require.Zero(t, f.admit(), "nothing to admit by")
	require.NoError(t, fc.PutRateLimits(f.ctx, []store.RateLimit{{Name: "stripe", Rate: 1, Burst: 1}}))
	f.clock.advance(time.Minute) // past any look an admission took
	require.Equal(t, 1, f.admit(), "the bucket's one token")
	got := f.claim(10)
	require.Len(t, got, 1)
	require.Equal(t, first.ID, got[0].RunID, "as they came")
	require.Equal(t, store.TaskQueued, f.status(second.ID, "a"))
}

func testRateLimitKeysApart(f *fixture, fc store.FlowControl) {
	t := f.t
	require.NoError(t, fc.PutRateLimits(f.ctx, []store.RateLimit{{Name: "stripe", Rate: 1, Burst: 1}}))
	f.create(rated("A", "stripe", "acct_1", 1), rated("A", "stripe", "acct_1", 1),
		rated("A", "stripe", "acct_2", 1), rated("A", "stripe", "acct_2", 1))
	require.Len(t, f.claim(10), 2, "one token in each key's bucket")
	require.Zero(t, f.admit())
	// Units: a task that takes 2 of a bucket of 2.
	require.NoError(t, fc.PutRateLimits(f.ctx, []store.RateLimit{{Name: "big", Rate: 1, Burst: 2}}))
	f.create(rated("B", "big", "", 2), rated("B", "big", "", 1))
	require.Len(t, f.claim(10), 1)
	f.clock.advance(time.Second)
	require.Equal(t, 3, f.admit(), "the second of acct_1 and of acct_2, and the 1-unit task")
}

func testRateLimitNoHeadOfLine(f *fixture, fc store.FlowControl) {
	t := f.t
	require.NoError(t, fc.PutRateLimits(f.ctx, []store.RateLimit{{Name: "slow", Rate: 0.001, Burst: 1}}))
	runs := make([]store.NewRun, 200)
	for i := range runs {
		runs[i] = rated("B", "slow", "", 1)
	}
	f.create(runs...)
	f.admit()
	require.Len(t, f.claim(10), 1, "B's one token")
	a := newRun("wf", "A", task("a"))
	f.create(a)
	f.admit()
	got := f.claim(10)
	require.Len(t, got, 1)
	require.Equal(t, a.ID, got[0].RunID, "A's task is not behind B's waiting backlog")
	// And B's tasks behind A's, of another tenant and unlimited, likewise.
	b := newRun("wf", "B", task("a"))
	f.create(b)
	got = f.claim(10)
	require.Len(t, got, 1)
	require.Equal(t, b.ID, got[0].RunID)
}

func testRateLimitWaitSaysWhy(f *fixture, fc store.FlowControl) {
	t := f.t
	require.NoError(t, fc.PutRateLimits(f.ctx, []store.RateLimit{{Name: "stripe", Rate: 4, Burst: 1}}))
	first, second, third := rated("A", "stripe", "acct_42", 1), rated("A", "stripe", "acct_42", 1), rated("A", "stripe", "acct_42", 1)
	f.create(first, second, third)
	require.Len(t, f.claim(10), 1)
	places, err := f.st.QueuePlaces(f.ctx, second.ID, []string{"a"})
	require.NoError(t, err)
	require.Equal(t, store.QueuePlace{RateLimited: "rate limit stripe (key acct_42): next token in 250ms"}, places["a"])
	places, err = f.st.QueuePlaces(f.ctx, third.ID, []string{"a"})
	require.NoError(t, err)
	require.Equal(t, store.QueuePlace{RateLimited: "rate limit stripe (key acct_42): 1 waiting ahead, next token in 250ms"}, places["a"])
}

func testRateLimitCancel(f *fixture, fc store.FlowControl) {
	t := f.t
	require.NoError(t, fc.PutRateLimits(f.ctx, []store.RateLimit{{Name: "stripe", Rate: 1, Burst: 1}}))
	first, second, third := rated("A", "stripe", "", 1), rated("A", "stripe", "", 1), rated("A", "stripe", "", 1)
	f.create(first, second, third)
	// The first, let in with the bucket's token, is cancelled before its
	// claim: its token stays in the bucket, for the next at the bucket's
	// next look.
	ok, err := f.st.CancelRun(f.ctx, first.ID)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = f.st.CancelRun(f.ctx, second.ID) // a waiting one
	require.NoError(t, err)
	require.True(t, ok)
	f.clock.advance(time.Second)
	require.Equal(t, 1, f.admit())
	got := f.claim(10)
	require.Len(t, got, 1)
	require.Equal(t, third.ID, got[0].RunID, "the cancelled runs' places and tokens go to the next")
}

func testRateLimitPriority(f *fixture, fc store.FlowControl) {
	t := f.t
	require.NoError(t, fc.PutRateLimits(f.ctx, []store.RateLimit{{Name: "stripe", Rate: 1, Burst: 1}}))
	f.create(rated("A", "stripe", "", 1)) // takes the token
	require.Len(t, f.claim(10), 1)
	bulk := rated("A", "stripe", "", 1)
	f.create(bulk)
	urgent := rated("A", "stripe", "", 1)
	urgent.Priority = 3
	f.create(urgent)
	f.clock.advance(time.Second)
	require.Equal(t, 1, f.admit())
	got := f.claim(10)
	require.Len(t, got, 1)
	require.Equal(t, urgent.ID, got[0].RunID, "waiting tasks are admitted higher priority first")
}

func testRateLimitRetry(f *fixture, fc store.FlowControl) {
	t := f.t
	require.NoError(t, fc.PutRateLimits(f.ctx, []store.RateLimit{{Name: "stripe", Rate: 1, Burst: 1}}))
	r := rated("A", "stripe", "", 1)
	f.create(r)
	f.admit()
	ct := f.claimOne()
	f.complete(store.TaskResult{RunID: ct.RunID, Step: ct.Step, Attempt: ct.Attempt, Claim: ct.Claim, Outcome: store.OutcomeRetry, Error: "x", Delay: time.Millisecond})
	f.clock.advance(time.Millisecond)
	f.admit() // the retry delay ends: the task waits for a token again
	require.Empty(t, f.claim(10), "the retry takes a token too")
	f.clock.advance(time.Second)
	f.admit()
	got := f.claim(10)
	require.Len(t, got, 1)
	require.Equal(t, 2, got[0].Attempt)
}

func testBadRateLimits(f *fixture, fc store.FlowControl) {
	t := f.t
	for _, l := range []store.RateLimit{{Name: "x", Rate: 0, Burst: 1}, {Name: "x", Rate: 1, Burst: 0}, {Rate: 1, Burst: 1}} {
		require.Error(t, fc.PutRateLimits(f.ctx, []store.RateLimit{l}), "%+v", l)
	}
}

// testRateLimitLongBacklog: a backlog longer than one admission reads is
// let in whole, by admissions that follow each other.
func testRateLimitLongBacklog(f *fixture, fc store.FlowControl) {
	t := f.t
	const burst = 1_000_000
	require.NoError(t, fc.PutRateLimits(f.ctx, []store.RateLimit{{Name: "wide", Rate: burst, Burst: burst}}))
	f.create(rated("A", "wide", "", burst)) // takes the whole bucket
	require.Len(t, f.claim(1), 1)
	const n = 2500
	runs := make([]store.NewRun, n)
	for i := range runs {
		runs[i] = rated("A", "wide", "", 1)
	}
	f.create(runs...)
	require.Zero(t, len(f.claim(n)), "an empty bucket: they wait")
	f.clock.advance(time.Second)
	claimed := 0
	for range 20 {
		f.admit()
		claimed += len(f.claim(n))
		if claimed == n {
			break
		}
	}
	require.Equal(t, n, claimed, "every waiting task was let in")
}
