// Package flows holds the workflows of dagen's benchmark (examples/bench):
// Single (one no-op step), Chain (ten no-op steps in a chain), Chain20
// (twenty), ChainParent (ten, one of which runs a ChildChain of ten as a
// child run), Fan (one
// step, fifty parallel steps, one fan-in), Pair (two steps, for
// step-to-step latency) and Map (a slice, a mapped step run once per
// element, a collector). Every step is a no-op, so the benchmark measures
// the engine and the store, not the work.
//
// The last step of each workflow reports to the [Probe] found in its
// context, so a benchmark can tell cheaply when its runs are nearly done.
//
// dag_gen.go is written by go generate (dagen) and committed.
package flows

//go:generate go run github.com/dagenhq/dagen/cmd/dagen

import (
	"context"
	"sync/atomic"
)

// Probe counts the runs whose last step has executed. Steps find it in
// their context (see WithProbe). Delivery is at least once, so a count may
// run ahead of the runs the store has finished: use it as a hint and
// confirm with the store.
type Probe struct {
	done atomic.Int64
}

// Done returns how many last steps have executed.
func (p *Probe) Done() int64 { return p.done.Load() }

type probeKey struct{}

// WithProbe returns ctx carrying p. Pass it to engine.Start: steps see
// the values of that context.
func WithProbe(ctx context.Context, p *Probe) context.Context {
	return context.WithValue(ctx, probeKey{}, p)
}

// finished tells the context's probe, if any, that a last step executed.
func finished(ctx context.Context) {
	if p, ok := ctx.Value(probeKey{}).(*Probe); ok {
		p.done.Add(1)
	}
}

// Single is the input of the Single workflow: one no-op step.
//
// The last step of every workflow here returns the input's N: dagen
// generates code that does not compile for a workflow none of whose steps
// returns a value.
//
//dag:workflow
type Single struct {
	N int
}

// Only is the one step of the Single workflow.
//
//dag:step
func Only(ctx context.Context, s Single) (int, error) {
	finished(ctx)
	return s.N, nil
}

// Capped is the input of the Capped workflow: Single's one no-op step,
// with at most one run of each Key RUNNING at a time.
//
//dag:workflow concurrency=1 per=Key
type Capped struct {
	Key string
	N   int
}

// CappedOnly is the one step of the Capped workflow.
//
//dag:step
func CappedOnly(ctx context.Context, c Capped) (int, error) {
	finished(ctx)
	return c.N, nil
}

// BenchLimit is a rate limit that never binds: single_limited measures
// what taking its tokens costs.
//
//dag:ratelimit rate=10000000/s burst=10000000
const BenchLimit = "bench"

// Limited is the input of the Limited workflow: Single's one no-op step,
// which takes a token of BenchLimit's bucket for Key.
//
//dag:workflow
type Limited struct {
	Key string
	N   int
}

// LimitedOnly is the one step of the Limited workflow.
//
//dag:step ratelimit=bench per=Key
func LimitedOnly(ctx context.Context, l Limited) (int, error) {
	finished(ctx)
	return l.N, nil
}

// Pair is the input of the Pair workflow: A then B, for step-to-step
// latency.
//
//dag:workflow
type Pair struct {
	N int
}

// A is the first step of the Pair workflow.
//
//dag:step
func A(ctx context.Context, p Pair) error { return nil }

// B is the second step of the Pair workflow.
//
//dag:step after=A
func B(ctx context.Context, p Pair) (int, error) {
	finished(ctx)
	return p.N, nil
}

// Chain is the input of the Chain workflow: S1 → S2 → … → S10, each step
// passing a small int to the next.
//
//dag:workflow
type Chain struct {
	N int
}

// S1 is the first step of the Chain workflow.
//
//dag:step
func S1(ctx context.Context, c Chain) (int, error) { return c.N, nil }

// S2 is step 2 of the Chain workflow.
//
//dag:step after=S1
func S2(ctx context.Context, c Chain, n int) (int, error) {
	return n + 1, nil
}

// S3 is step 3 of the Chain workflow.
//
//dag:step after=S2
func S3(ctx context.Context, c Chain, n int) (int, error) {
	return n + 1, nil
}

// S4 is step 4 of the Chain workflow.
//
//dag:step after=S3
func S4(ctx context.Context, c Chain, n int) (int, error) {
	return n + 1, nil
}

// S5 is step 5 of the Chain workflow.
//
//dag:step after=S4
func S5(ctx context.Context, c Chain, n int) (int, error) {
	return n + 1, nil
}

// S6 is step 6 of the Chain workflow.
//
//dag:step after=S5
func S6(ctx context.Context, c Chain, n int) (int, error) {
	return n + 1, nil
}

// S7 is step 7 of the Chain workflow.
//
//dag:step after=S6
func S7(ctx context.Context, c Chain, n int) (int, error) {
	return n + 1, nil
}

// S8 is step 8 of the Chain workflow.
//
//dag:step after=S7
func S8(ctx context.Context, c Chain, n int) (int, error) {
	return n + 1, nil
}

// S9 is step 9 of the Chain workflow.
//
//dag:step after=S8
func S9(ctx context.Context, c Chain, n int) (int, error) {
	return n + 1, nil
}

// S10 is step 10 of the Chain workflow.
//
//dag:step after=S9
func S10(ctx context.Context, c Chain, n int) (int, error) {
	finished(ctx)
	return n + 1, nil
}

// Fan is the input of the Fan workflow: Root, then F01…F50 in parallel,
// then Join. The branches return only an error, so Join takes no values.
//
//dag:workflow
type Fan struct {
	N int
}

// Root is the first step of the Fan workflow.
//
//dag:step
func Root(ctx context.Context, f Fan) error { return nil }

// F01 is branch 1 of the Fan fan-out.
//
//dag:step after=Root
func F01(ctx context.Context, f Fan) error { return nil }

// F02 is branch 2 of the Fan fan-out.
//
//dag:step after=Root
func F02(ctx context.Context, f Fan) error { return nil }

// F03 is branch 3 of the Fan fan-out.
//
//dag:step after=Root
func F03(ctx context.Context, f Fan) error { return nil }

// F04 is branch 4 of the Fan fan-out.
//
//dag:step after=Root
func F04(ctx context.Context, f Fan) error { return nil }

// F05 is branch 5 of the Fan fan-out.
//
//dag:step after=Root
func F05(ctx context.Context, f Fan) error { return nil }

// F06 is branch 6 of the Fan fan-out.
//
//dag:step after=Root
func F06(ctx context.Context, f Fan) error { return nil }

// F07 is branch 7 of the Fan fan-out.
//
//dag:step after=Root
func F07(ctx context.Context, f Fan) error { return nil }

// F08 is branch 8 of the Fan fan-out.
//
//dag:step after=Root
func F08(ctx context.Context, f Fan) error { return nil }

// F09 is branch 9 of the Fan fan-out.
//
//dag:step after=Root
func F09(ctx context.Context, f Fan) error { return nil }

// F10 is branch 10 of the Fan fan-out.
//
//dag:step after=Root
func F10(ctx context.Context, f Fan) error { return nil }

// F11 is branch 11 of the Fan fan-out.
//
//dag:step after=Root
func F11(ctx context.Context, f Fan) error { return nil }

// F12 is branch 12 of the Fan fan-out.
//
//dag:step after=Root
func F12(ctx context.Context, f Fan) error { return nil }

// F13 is branch 13 of the Fan fan-out.
//
//dag:step after=Root
func F13(ctx context.Context, f Fan) error { return nil }

// F14 is branch 14 of the Fan fan-out.
//
//dag:step after=Root
func F14(ctx context.Context, f Fan) error { return nil }

// F15 is branch 15 of the Fan fan-out.
//
//dag:step after=Root
func F15(ctx context.Context, f Fan) error { return nil }

// F16 is branch 16 of the Fan fan-out.
//
//dag:step after=Root
func F16(ctx context.Context, f Fan) error { return nil }

// F17 is branch 17 of the Fan fan-out.
//
//dag:step after=Root
func F17(ctx context.Context, f Fan) error { return nil }

// F18 is branch 18 of the Fan fan-out.
//
//dag:step after=Root
func F18(ctx context.Context, f Fan) error { return nil }

// F19 is branch 19 of the Fan fan-out.
//
//dag:step after=Root
func F19(ctx context.Context, f Fan) error { return nil }

// F20 is branch 20 of the Fan fan-out.
//
//dag:step after=Root
func F20(ctx context.Context, f Fan) error { return nil }

// F21 is branch 21 of the Fan fan-out.
//
//dag:step after=Root
func F21(ctx context.Context, f Fan) error { return nil }

// F22 is branch 22 of the Fan fan-out.
//
//dag:step after=Root
func F22(ctx context.Context, f Fan) error { return nil }

// F23 is branch 23 of the Fan fan-out.
//
//dag:step after=Root
func F23(ctx context.Context, f Fan) error { return nil }

// F24 is branch 24 of the Fan fan-out.
//
//dag:step after=Root
func F24(ctx context.Context, f Fan) error { return nil }

// F25 is branch 25 of the Fan fan-out.
//
//dag:step after=Root
func F25(ctx context.Context, f Fan) error { return nil }

// F26 is branch 26 of the Fan fan-out.
//
//dag:step after=Root
func F26(ctx context.Context, f Fan) error { return nil }

// F27 is branch 27 of the Fan fan-out.
//
//dag:step after=Root
func F27(ctx context.Context, f Fan) error { return nil }

// F28 is branch 28 of the Fan fan-out.
//
//dag:step after=Root
func F28(ctx context.Context, f Fan) error { return nil }

// F29 is branch 29 of the Fan fan-out.
//
//dag:step after=Root
func F29(ctx context.Context, f Fan) error { return nil }

// F30 is branch 30 of the Fan fan-out.
//
//dag:step after=Root
func F30(ctx context.Context, f Fan) error { return nil }

// F31 is branch 31 of the Fan fan-out.
//
//dag:step after=Root
func F31(ctx context.Context, f Fan) error { return nil }

// F32 is branch 32 of the Fan fan-out.
//
//dag:step after=Root
func F32(ctx context.Context, f Fan) error { return nil }

// F33 is branch 33 of the Fan fan-out.
//
//dag:step after=Root
func F33(ctx context.Context, f Fan) error { return nil }

// F34 is branch 34 of the Fan fan-out.
//
//dag:step after=Root
func F34(ctx context.Context, f Fan) error { return nil }

// F35 is branch 35 of the Fan fan-out.
//
//dag:step after=Root
func F35(ctx context.Context, f Fan) error { return nil }

// F36 is branch 36 of the Fan fan-out.
//
//dag:step after=Root
func F36(ctx context.Context, f Fan) error { return nil }

// F37 is branch 37 of the Fan fan-out.
//
//dag:step after=Root
func F37(ctx context.Context, f Fan) error { return nil }

// F38 is branch 38 of the Fan fan-out.
//
//dag:step after=Root
func F38(ctx context.Context, f Fan) error { return nil }

// F39 is branch 39 of the Fan fan-out.
//
//dag:step after=Root
func F39(ctx context.Context, f Fan) error { return nil }

// F40 is branch 40 of the Fan fan-out.
//
//dag:step after=Root
func F40(ctx context.Context, f Fan) error { return nil }

// F41 is branch 41 of the Fan fan-out.
//
//dag:step after=Root
func F41(ctx context.Context, f Fan) error { return nil }

// F42 is branch 42 of the Fan fan-out.
//
//dag:step after=Root
func F42(ctx context.Context, f Fan) error { return nil }

// F43 is branch 43 of the Fan fan-out.
//
//dag:step after=Root
func F43(ctx context.Context, f Fan) error { return nil }

// F44 is branch 44 of the Fan fan-out.
//
//dag:step after=Root
func F44(ctx context.Context, f Fan) error { return nil }

// F45 is branch 45 of the Fan fan-out.
//
//dag:step after=Root
func F45(ctx context.Context, f Fan) error { return nil }

// F46 is branch 46 of the Fan fan-out.
//
//dag:step after=Root
func F46(ctx context.Context, f Fan) error { return nil }

// F47 is branch 47 of the Fan fan-out.
//
//dag:step after=Root
func F47(ctx context.Context, f Fan) error { return nil }

// F48 is branch 48 of the Fan fan-out.
//
//dag:step after=Root
func F48(ctx context.Context, f Fan) error { return nil }

// F49 is branch 49 of the Fan fan-out.
//
//dag:step after=Root
func F49(ctx context.Context, f Fan) error { return nil }

// F50 is branch 50 of the Fan fan-out.
//
//dag:step after=Root
func F50(ctx context.Context, f Fan) error { return nil }

// Join is the fan-in of the Fan workflow: it runs once, after all 50
// branches.
//
//dag:step after=F01,F02,F03,F04,F05,F06,F07,F08,F09,F10,F11,F12,F13,F14,F15,F16,F17,F18,F19,F20,F21,F22,F23,F24,F25,F26,F27,F28,F29,F30,F31,F32,F33,F34,F35,F36,F37,F38,F39,F40,F41,F42,F43,F44,F45,F46,F47,F48,F49,F50
func Join(ctx context.Context, f Fan) (int, error) {
	finished(ctx)
	return f.N, nil
}

// Map is the input of the Map workflow: Items returns N ints, Elem (a
// mapped step, each=Items) runs once per int, and Collect takes the slice
// of Elem's outputs.
//
//dag:workflow
type Map struct {
	N int
}

// Items is the first step of the Map workflow: the slice Elem maps.
//
//dag:step
func Items(ctx context.Context, m Map) ([]int, error) {
	items := make([]int, m.N)
	for i := range items {
		items[i] = i
	}
	return items, nil
}

// Elem runs once per element of Items, with no limit.
//
//dag:step after=Items each=Items
func Elem(ctx context.Context, m Map, i int) (int, error) { return i, nil }

// Collect is the Map workflow's last step: it gets every element's
// output, in element order, once the last element is done.
//
//dag:step after=Elem
func Collect(ctx context.Context, m Map, out []int) (int, error) {
	finished(ctx)
	return len(out), nil
}

// Blob is the input of the Blob workflow: a large payload (Data) read by
// each of its 7 steps, B1 → … → B7, for the payload workload's peak RSS.
//
//dag:workflow
type Blob struct {
	Data string
}

// B1 is the first step of the Blob workflow.
//
//dag:step
func B1(ctx context.Context, b Blob) (int, error) { return len(b.Data), nil }

// B2 is step 2 of the Blob workflow.
//
//dag:step after=B1
func B2(ctx context.Context, b Blob, n int) (int, error) { return n + len(b.Data), nil }

// B3 is step 3 of the Blob workflow.
//
//dag:step after=B2
func B3(ctx context.Context, b Blob, n int) (int, error) { return n + len(b.Data), nil }

// B4 is step 4 of the Blob workflow.
//
//dag:step after=B3
func B4(ctx context.Context, b Blob, n int) (int, error) { return n + len(b.Data), nil }

// B5 is step 5 of the Blob workflow.
//
//dag:step after=B4
func B5(ctx context.Context, b Blob, n int) (int, error) { return n + len(b.Data), nil }

// B6 is step 6 of the Blob workflow.
//
//dag:step after=B5
func B6(ctx context.Context, b Blob, n int) (int, error) { return n + len(b.Data), nil }

// B7 is step 7 of the Blob workflow.
//
//dag:step after=B6
func B7(ctx context.Context, b Blob, n int) (int, error) {
	finished(ctx)
	return n + len(b.Data), nil
}

// Chain20 is the input of the Chain20 workflow: T01 → T02 → … → T20, the
// chain of twenty steps that ChainParent's ten steps and its child's ten
// are measured against.
//
//dag:workflow
type Chain20 struct {
	N int
}

// T01 is the first step of the Chain20 workflow.
//
//dag:step
func T01(ctx context.Context, c Chain20) (int, error) { return c.N, nil }

// T02 is step 2 of the Chain20 workflow.
//
//dag:step after=T01
func T02(ctx context.Context, c Chain20, n int) (int, error) {
	return n + 1, nil
}

// T03 is step 3 of the Chain20 workflow.
//
//dag:step after=T02
func T03(ctx context.Context, c Chain20, n int) (int, error) {
	return n + 1, nil
}

// T04 is step 4 of the Chain20 workflow.
//
//dag:step after=T03
func T04(ctx context.Context, c Chain20, n int) (int, error) {
	return n + 1, nil
}

// T05 is step 5 of the Chain20 workflow.
//
//dag:step after=T04
func T05(ctx context.Context, c Chain20, n int) (int, error) {
	return n + 1, nil
}

// T06 is step 6 of the Chain20 workflow.
//
//dag:step after=T05
func T06(ctx context.Context, c Chain20, n int) (int, error) {
	return n + 1, nil
}

// T07 is step 7 of the Chain20 workflow.
//
//dag:step after=T06
func T07(ctx context.Context, c Chain20, n int) (int, error) {
	return n + 1, nil
}

// T08 is step 8 of the Chain20 workflow.
//
//dag:step after=T07
func T08(ctx context.Context, c Chain20, n int) (int, error) {
	return n + 1, nil
}

// T09 is step 9 of the Chain20 workflow.
//
//dag:step after=T08
func T09(ctx context.Context, c Chain20, n int) (int, error) {
	return n + 1, nil
}

// T10 is step 10 of the Chain20 workflow.
//
//dag:step after=T09
func T10(ctx context.Context, c Chain20, n int) (int, error) {
	return n + 1, nil
}

// T11 is step 11 of the Chain20 workflow.
//
//dag:step after=T10
func T11(ctx context.Context, c Chain20, n int) (int, error) {
	return n + 1, nil
}

// T12 is step 12 of the Chain20 workflow.
//
//dag:step after=T11
func T12(ctx context.Context, c Chain20, n int) (int, error) {
	return n + 1, nil
}

// T13 is step 13 of the Chain20 workflow.
//
//dag:step after=T12
func T13(ctx context.Context, c Chain20, n int) (int, error) {
	return n + 1, nil
}

// T14 is step 14 of the Chain20 workflow.
//
//dag:step after=T13
func T14(ctx context.Context, c Chain20, n int) (int, error) {
	return n + 1, nil
}

// T15 is step 15 of the Chain20 workflow.
//
//dag:step after=T14
func T15(ctx context.Context, c Chain20, n int) (int, error) {
	return n + 1, nil
}

// T16 is step 16 of the Chain20 workflow.
//
//dag:step after=T15
func T16(ctx context.Context, c Chain20, n int) (int, error) {
	return n + 1, nil
}

// T17 is step 17 of the Chain20 workflow.
//
//dag:step after=T16
func T17(ctx context.Context, c Chain20, n int) (int, error) {
	return n + 1, nil
}

// T18 is step 18 of the Chain20 workflow.
//
//dag:step after=T17
func T18(ctx context.Context, c Chain20, n int) (int, error) {
	return n + 1, nil
}

// T19 is step 19 of the Chain20 workflow.
//
//dag:step after=T18
func T19(ctx context.Context, c Chain20, n int) (int, error) {
	return n + 1, nil
}

// T20 is step 20 of the Chain20 workflow.
//
//dag:step after=T19
func T20(ctx context.Context, c Chain20, n int) (int, error) {
	finished(ctx)
	return n + 1, nil
}

// ChildChain is the input of the ChildChain workflow: C01 → … → C10, the
// chain ChainParent runs as a child; its result is C10's output.
//
//dag:workflow result=C10
type ChildChain struct {
	N int
}

// C01 is the first step of the ChildChain workflow.
//
//dag:step
func C01(ctx context.Context, c ChildChain) (int, error) { return c.N, nil }

// C02 is step 2 of the ChildChain workflow.
//
//dag:step after=C01
func C02(ctx context.Context, c ChildChain, n int) (int, error) {
	return n + 1, nil
}

// C03 is step 3 of the ChildChain workflow.
//
//dag:step after=C02
func C03(ctx context.Context, c ChildChain, n int) (int, error) {
	return n + 1, nil
}

// C04 is step 4 of the ChildChain workflow.
//
//dag:step after=C03
func C04(ctx context.Context, c ChildChain, n int) (int, error) {
	return n + 1, nil
}

// C05 is step 5 of the ChildChain workflow.
//
//dag:step after=C04
func C05(ctx context.Context, c ChildChain, n int) (int, error) {
	return n + 1, nil
}

// C06 is step 6 of the ChildChain workflow.
//
//dag:step after=C05
func C06(ctx context.Context, c ChildChain, n int) (int, error) {
	return n + 1, nil
}

// C07 is step 7 of the ChildChain workflow.
//
//dag:step after=C06
func C07(ctx context.Context, c ChildChain, n int) (int, error) {
	return n + 1, nil
}

// C08 is step 8 of the ChildChain workflow.
//
//dag:step after=C07
func C08(ctx context.Context, c ChildChain, n int) (int, error) {
	return n + 1, nil
}

// C09 is step 9 of the ChildChain workflow.
//
//dag:step after=C08
func C09(ctx context.Context, c ChildChain, n int) (int, error) {
	return n + 1, nil
}

// C10 is step 10 of the ChildChain workflow.
//
//dag:step after=C09
func C10(ctx context.Context, c ChildChain, n int) (int, error) {
	return n + 1, nil
}

// ChainParent is the input of the ChainParent workflow: P01 → … → P10,
// whose P05 runs a ChildChain as a child run: ten steps of its own and
// ten of its child's, to measure what a child step costs against Chain20.
//
//dag:workflow
type ChainParent struct {
	N int
}

// P01 is the first step of the ChainParent workflow.
//
//dag:step
func P01(ctx context.Context, c ChainParent) (int, error) { return c.N, nil }

// P02 is step 2 of the ChainParent workflow.
//
//dag:step after=P01
func P02(ctx context.Context, c ChainParent, n int) (int, error) {
	return n + 1, nil
}

// P03 is step 3 of the ChainParent workflow.
//
//dag:step after=P02
func P03(ctx context.Context, c ChainParent, n int) (int, error) {
	return n + 1, nil
}

// P04 is step 4 of the ChainParent workflow.
//
//dag:step after=P03
func P04(ctx context.Context, c ChainParent, n int) (int, error) {
	return n + 1, nil
}

// P05 runs a ChildChain as a child, and completes with its result.
//
//dag:child after=P04
func P05(ctx context.Context, c ChainParent, n int) (ChildChain, error) {
	return ChildChain{N: n + 1}, nil
}

// P06 is step 6 of the ChainParent workflow.
//
//dag:step after=P05
func P06(ctx context.Context, c ChainParent, n int) (int, error) {
	return n + 1, nil
}

// P07 is step 7 of the ChainParent workflow.
//
//dag:step after=P06
func P07(ctx context.Context, c ChainParent, n int) (int, error) {
	return n + 1, nil
}

// P08 is step 8 of the ChainParent workflow.
//
//dag:step after=P07
func P08(ctx context.Context, c ChainParent, n int) (int, error) {
	return n + 1, nil
}

// P09 is step 9 of the ChainParent workflow.
//
//dag:step after=P08
func P09(ctx context.Context, c ChainParent, n int) (int, error) {
	return n + 1, nil
}

// P10 is step 10 of the ChainParent workflow.
//
//dag:step after=P09
func P10(ctx context.Context, c ChainParent, n int) (int, error) {
	finished(ctx)
	return n + 1, nil
}
