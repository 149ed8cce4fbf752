package analysis

import (
	"fmt"
	"go/token"
	"go/types"
	"strings"
	"time"

	"github.com/dagenhq/dagen/runtime/cronexpr"
	"github.com/dagenhq/dagen/runtime/store"
)

// Schedules: //dag:schedule on a func(ctx context.Context, slot
// time.Time) (In, error) starts a run of the workflow whose input is In
// at each slot of cron=, read in zone=, with the input the func builds
// for the slot (engine.ScheduleDef). The expression and the zone are
// checked with the parser the workers use, package runtime/cronexpr, so
// that what go generate accepts the engine does too; the tenant with the
// engine's own rule, store.ValidTenant.

// scheduleShape is the signature a schedule func has, for messages.
const scheduleShape = "func(context.Context, time.Time) (In, error) where In is a workflow input"

// addSchedule reads a //dag:schedule func and adds it to the workflow its
// result is the input of.
func (a *analyzer) addSchedule(f *found) {
	fn, _ := a.pkg.TypesInfo.Defs[f.fn.Name].(*types.Func)
	if fn == nil {
		return
	}
	sig := fn.Type().(*types.Signature)
	sc := &Schedule{
		Func: fn.Name(),
		Name: fn.Name(),
		Pos:  a.position(f.fn.Name.Pos()),
		Sig:  sig,
	}
	if ar, ok := f.args["name"]; ok {
		sc.Name = ar.Value
		if err := store.ValidKey(store.ScheduleKey(sc.Name, time.Time{})); err != nil {
			a.errorf(ar.ValuePos, ar.End, BadName, "schedule name %q is too long: the key of each slot's run, schedule:<name>:<slot>, is at most %d bytes", sc.Name, store.MaxKeyLen)
		}
	}
	a.readCron(f, sc)
	if ar, ok := f.args["tenant"]; ok {
		if err := store.ValidTenant(ar.Value); err != nil {
			a.errorf(ar.ValuePos, ar.End, MalformedDirective, "tenant=%q: %v", ar.Value, err)
		}
		sc.Tenant = ar.Value
	}
	if ar, ok := f.args["catchup"]; ok {
		if !store.ValidCatchup(store.Catchup(ar.Value)) {
			a.errorf(ar.ValuePos, ar.End, MalformedDirective,
				"catchup=%s: want latest (one run, for the latest missed slot; the default), all (one run per missed slot) or none (no run for a missed slot)", ar.Value)
		}
		sc.Catchup = ar.Value
	}
	w := a.scheduleWorkflow(f, fn, sig)
	if w == nil {
		return
	}
	for _, other := range w.Schedules {
		if other.Name == sc.Name {
			a.errorAt(sc.Pos, DuplicateName, fmt.Sprintf("schedule name %q of %s is already used by %s in workflow %s: give one of them another name=", sc.Name, sc.Func, other.Func, w.TypeName),
				Related{Pos: other.Pos, Message: "other schedule " + other.Func})
			return
		}
	}
	w.Schedules = append(w.Schedules, sc)
}

// readCron reads cron= and zone= and checks them as the workers will.
func (a *analyzer) readCron(f *found, sc *Schedule) {
	zoneOK := true
	if ar, ok := f.args["zone"]; ok {
		if _, err := cronexpr.LoadZone(ar.Value); err != nil {
			a.errorf(ar.ValuePos, ar.End, BadCron, "zone=%s: %v", ar.Value, err)
			zoneOK = false
		}
		sc.Zone = ar.Value
	}
	ar, ok := f.args["cron"]
	if !ok {
		if !f.dupKeys["cron"] {
			a.errorf(f.dir.Pos, f.dir.NameEnd, MissingKey, `//dag:schedule on %s has no cron=: write when it starts runs, as in cron="0 3 * * *" (03:00 every day)`, sc.Func)
		}
		return
	}
	sc.Cron = ar.Value
	zone := sc.Zone
	if !zoneOK {
		zone = "" // reported: check the expression alone
	}
	if _, err := cronexpr.Parse(ar.Value, zone); err != nil {
		a.errorf(ar.ValuePos, ar.End, BadCron, "%v", err)
	}
}

// scheduleWorkflow checks a schedule func's signature and returns the
// workflow whose input it returns, or nil.
func (a *analyzer) scheduleWorkflow(f *found, fn *types.Func, sig *types.Signature) *Workflow {
	params, res := sig.Params(), sig.Results()
	shaped := !sig.Variadic() && params.Len() == 2 && isContext(params.At(0).Type()) && isNamed(params.At(1).Type(), "time", "Time") &&
		res.Len() == 2 && isError(res.At(1).Type())
	if !shaped {
		a.errorf(f.fn.Name.Pos(), token.NoPos, BadSchedule, "schedule %s is %s: a schedule func is %s",
			fn.Name(), a.typeString(sig), scheduleShape)
		return nil
	}
	out := res.At(0)
	if w := a.workflowFor(out.Type()); w != nil {
		return w
	}
	for _, t := range a.aliasTargets {
		if types.Identical(t, out.Type()) {
			return nil // the alias's error says what to do
		}
	}
	pos := out.Pos()
	if !pos.IsValid() {
		pos = f.fn.Name.Pos()
	}
	msg := fmt.Sprintf("schedule %s returns %s, which is not a //dag:workflow type of this package: a schedule func returns the input of the workflow it starts",
		fn.Name(), a.typeString(out.Type()))
	if p, ok := out.Type().(*types.Pointer); ok && a.workflowFor(p.Elem()) != nil {
		msg += fmt.Sprintf("; return %s, not a pointer", a.typeString(p.Elem()))
	} else if len(a.workflows) == 0 {
		msg += "; mark the input type with //dag:workflow"
	} else {
		msg += " (workflows: " + strings.Join(a.workflowNames(), ", ") + ")"
	}
	a.errorf(pos, token.NoPos, UnknownWorkflow, "%s", msg)
	return nil
}
