// Package analysis reads dagen directives from Go packages, builds the
// workflow graphs they describe and checks them statically.
//
// It is the front half of the dagen generator. [Load] loads packages with
// golang.org/x/tools/go/packages, tolerating package and type errors that sit
// in our own (possibly stale) generated file, dag_gen.go. [Analyze] then:
//
//   - finds //dag:workflow, //dag:step, //dag:child, //dag:sleep, //dag:signal,
//     //dag:schedule, //dag:onfailure and //dag:ratelimit directives in the raw comment lists (ast.CommentGroup.Text drops
//     directive lines), tokenizing their key=value arguments with exact
//     positions so that an error points at the key it is about;
//   - resolves every name (parents, skip predicates, types) through go/types;
//   - builds one [Workflow] per //dag:workflow type and checks it: parents
//     exist and belong to the same workflow, the graph has no cycle,
//     signatures bind parent outputs by type in after= order, skip
//     predicates can be given their parameters, outputs can be stored.
//
// The directives and the keys they accept (unknown, repeated and malformed
// keys are errors that say how to write them):
//
//	//dag:workflow   on the input type       name= key=Field concurrency=N
//	                                         per=Field timeout=48h result=Step
//	                                         priority=0..9
//	//dag:step       on a step func          after=A,B skip=p,q each=P limit=N
//	                                         retry=N backoff=1s maxbackoff=1m
//	                                         timeout=30s name= ratelimit=NAME
//	                                         units=N per=Field
//	//dag:child      on a child step func    the keys of //dag:step but
//	                                         ratelimit= units= per=
//	//dag:sleep      on a sleep func         after=A,B name=
//	//dag:signal     on a payload type       after=A,B timeout=72h name=
//	//dag:schedule   on an input func        cron="0 3 * * *" zone=Europe/Paris
//	                                         tenant= catchup=latest|all|none name=
//	//dag:onfailure  on the failure handler  (none)
//	//dag:ratelimit  on a string constant    rate=100/s|6000/m|10/h burst=N
//
// after= and skip= take comma-separated func names without spaces. each=P
// maps a step: it names one parent listed in after= whose output is a
// slice []T, the step's parameter for P is one element T (never
// dag.Maybe), and the step runs once per element. A mapped step's value,
// as its children, their skip predicates and the run's result see it, is
// the slice of its elements' outputs ([]Out, or dag.Maybe[[]Out] for an
// optional parent), so maps chain: each=Resize after a mapped Resize maps
// its []Thumb. The mapped step's own skip predicates apply to it as a
// whole and see P's whole slice. limit=N (N > 0, only with each=) bounds
// how many elements of one run are in flight at once. Sleeps and
// onfailure funcs cannot be mapped.
//
// key= gives runs an idempotency key: a field of the input, key=ID, or a
// dotted path of struct fields to one, key=Customer.ID, each name a field
// of the struct before it (promoted fields of embedded structs included).
// The generated Definition.Key reads the field from the run's encoded
// input, the JSON the engine stores, so the field must survive the JSON
// round trip: exported, not tagged json:"-" and not left out for another
// field of the same JSON name. No pointer may be on the path, since a nil
// would have no key. The field is a string or an integer (int*, uint* and
// named types of them), written in decimal; its zero value ("" or 0) is
// no key, and the run is started like any other.
//
// concurrency=N (N > 0) caps the workflow's runs: at most N are RUNNING
// at once, of all tenants together, and the others wait QUEUED and are
// admitted in the order they were triggered. per=Field makes it one cap
// per value of a field of the input, the run's concurrency key
// (concurrency=1 per=Customer.ID runs one at a time per customer): the
// generated Definition.ConcurrencyKey reads the field from the encoded
// input as Definition.Key reads key=, so the path follows the same rules,
// and a zero value ("" or 0) gives the empty concurrency key. per= needs
// concurrency=; key= and per= may name the same field or different ones.
// timeout=D (a positive Go duration, such as 48h or 90m) fails a run that
// has not finished D after its trigger ("timed out after 48h");
// engine.WithTimeout on a trigger sets another deadline for that run.
//
// //dag:signal on a type makes a signal wait: a node that, once its
// after= parents are resolved, waits for a signal whose payload is a value
// of the type, sent with the generated Send method. Children list it in
// after= by its stored name (the type's name unless name=) and take the
// payload as T or dag.Maybe[T], as they take a step's output; skip
// predicates may take it too. timeout= (a positive duration) ends the
// wait without a signal: the wait is then skipped, so it counts as a step
// that can be skipped; without timeout= it waits for ever. A wait belongs
// to the workflow of its parents, which must all be of one workflow; one
// without after= waits from the start of a run of the package's only
// workflow. The payload must round-trip through JSON like an output, and
// no step can be mapped over it (each=).
//
// //dag:child on a func(ctx, In, parents...) (ChildIn, error) makes a
// child step: it runs the workflow whose input type is ChildIn, of this
// package or another (whose directives are then read from its source, see
// foreign.go), and its value, as its children see it, is that workflow's
// result: the output of the step result= names on the child's
// //dag:workflow, as that step's children see it, or no value without
// result=. each= runs one child per element and gives the slice of their
// results. A workflow that runs itself through child steps, directly or
// through others, is an error printing the whole cycle.
//
// //dag:schedule on a func(ctx context.Context, slot time.Time) (In,
// error), where In is a workflow's input type, starts a run of that
// workflow at each slot of cron= with the input the func builds. cron= (a
// five-field expression or a descriptor such as @daily, Go-quoted when it
// has spaces) and zone= (an IANA name; default UTC) are checked with the
// parser the workers use, package runtime/cronexpr; tenant= with
// store.ValidTenant (default "schedule"); catchup= is latest (the
// default), all or none. The stored name, name= or the func's name, is
// unique among the workflow's schedules.
//
// //dag:ratelimit on a string constant declares a rate limit named by the
// constant's value: a token bucket that gains rate= tokens (N/s, N/m or
// N/h) and holds burst= of them (default one). A //dag:step with
// ratelimit=NAME takes units= tokens (default one, at most the burst)
// from it before each attempt, from one bucket per value of the input
// field per= names (read like key=) or from one bucket for all runs.
// Only //dag:step takes these keys. priority=N (0 to 9) on
// //dag:workflow is the priority of its runs. Neither is part of the
// signatures or the fingerprint (see ratelimit.go).
//
// Problems are data: each is a [Diagnostic] with a position, a [Code] and a
// message that says how to fix it where that is obvious. Analyze collects
// all of them, sorted by position, instead of stopping at the first; a
// package with an error yields no [Package], so nothing is generated from a
// graph known to be wrong.
//
// The checked graph ([Package], [Workflow], [Step]) is what package gen
// turns into code and what `dagen graph` draws.
package analysis
