// Package gen turns checked workflows into Go code: one dag_gen.go per
// package, written with github.com/dave/jennifer.
//
// [Generate] is pure. It loads and analyses the packages (package
// internal/analysis), and returns the files it would write together with
// every diagnostic, without touching the disk; [Write] writes them and
// [Diff] compares them with what is on disk. That split is what makes
// `dagen check` and `dagen diff` one-liners. A dag_gen.go left in a package
// whose directives are all gone comes back as a deletion, so it cannot
// linger with code for workflows that no longer exist.
//
// For a workflow whose input type is Order, the generated file holds:
//
//   - OrderFingerprint, the DAG shape as engine.Definition.Fingerprint
//     computes it;
//   - OrderDefinition, the engine.Definition with one adapter per step that
//     decodes the input and the parents' outputs into their Go types and
//     calls the user's func;
//   - OrderWorkflow (NewOrderWorkflow registers the definition), with Run,
//     Start, Get and CreateSchedule (a schedule of runs with one input,
//     created at run time), a Send method per signal wait (SendApproval
//     for //dag:signal on type Approval: the name of the type, or the
//     wait's stored name when another wait carries the same type), and
//     OrderRun with ID and Wait;
//   - the schedules of //dag:schedule funcs in OrderDefinition's
//     Schedules, each building its run's input with the func;
//   - OrderResult, one field per step with an output and per signal wait
//     (its payload): dag.Maybe[T] for a step or a wait that can be
//     skipped (a wait with timeout=), T otherwise; a mapped step's (each=) T is
//     the slice of its elements' outputs, []Out, as its children read it,
//     while its own Run reads its each= parent as one element and its
//     skip predicates read that parent's whole slice;
//   - compile-time guards, one per user func: a type holding the signature
//     the func was generated for, named for what to do
//     (_dagenSignature_Validate_changed_run_go_generate), and at the top of
//     OrderDefinition a variable of that type assigned the func, through
//     which the adapters call it. A signature changed after generation
//     fails the build on that line only, and the compiler's message names
//     the type; a func deleted or renamed fails there as "undefined".
//
// Output is gofmt'ed and deterministic: the same input gives the same bytes.
package gen
