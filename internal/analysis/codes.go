package analysis

import "strconv"

// Code classifies a diagnostic. Each code is documented with an example of
// source that produces it. Codes are stable identifiers for tests and
// tools; their numeric values are not.
type Code int

// Diagnostic codes.
const (
	_ Code = iota

	// LoadError is a problem reported by the go command or the type
	// checker while loading a package, outside dag_gen.go.
	//
	//	var x int = "s" // cannot use "s" (untyped string constant) as int value
	LoadError

	// MalformedDirective is a directive whose arguments cannot be read: an
	// argument that is not key=value, a bad quoted string, a value of the
	// wrong form.
	//
	//	//dag:step after Validate
	//	//dag:step retry=three
	//	//dag:step after=A,B each=A,B limit=0
	//	//dag:workflow key=Customer..ID
	//	//dag:workflow concurrency=0 timeout=soon
	//	//dag:schedule cron=0 3 * * * catchup=sometimes tenant=" acme"
	//	//dag:step ratelimit=stripe units=0
	//	//dag:step ratelimit=stripe units=50 // stripe has burst=20
	MalformedDirective

	// SpacedList is a list value with spaces after or before its commas,
	// which would otherwise read as more arguments.
	//
	//	//dag:step after=Validate, Quote
	SpacedList

	// NonPositiveDuration is a duration key (timeout=, backoff=,
	// maxbackoff=, and timeout= of a workflow or a signal) given zero or
	// less. Zero is what leaving the key out means, so writing it only
	// leaves readers guessing.
	//
	//	//dag:step timeout=0
	//	//dag:step backoff=-1s
	//	//dag:workflow timeout=0s
	//	//dag:signal after=Submit timeout=0
	NonPositiveDuration

	// UnknownDirective is //dag:NAME with a NAME dagen does not know.
	//
	//	//dag:stpe
	UnknownDirective

	// UnknownKey is a key a directive does not accept.
	//
	//	//dag:step afterr=Validate
	UnknownKey

	// DuplicateKey is a key given twice in one directive.
	//
	//	//dag:step retry=1 retry=2
	DuplicateKey

	// EmptyValue is a key without a value, or an empty list element.
	//
	//	//dag:step after=
	//	//dag:step after=A,,B
	EmptyValue

	// MisplacedDirective is a directive that is not directly above a
	// top-level declaration of the kind it applies to: a type for
	// //dag:workflow and //dag:signal, a constant for //dag:ratelimit, a
	// func for the others.
	//
	//	//dag:workflow
	//	func Order() {}
	//
	//	//dag:signal after=Submit
	//	func Approve(ctx context.Context, o Order) error
	//
	//	//dag:ratelimit rate=100/s
	//	var Stripe = "stripe"
	MisplacedDirective

	// AliasWorkflow is //dag:workflow on a type alias, which is no type of
	// its own.
	//
	//	//dag:workflow
	//	type Purchase = Order
	AliasWorkflow

	// MethodStep is a step, sleep, schedule or onfailure directive on a
	// method.
	//
	//	//dag:step
	//	func (s *Service) Validate(ctx context.Context, o Order) error
	MethodStep

	// GenericDecl is a directive on a generic function or type.
	//
	//	//dag:step
	//	func Validate[T any](ctx context.Context, o Order) error
	//
	//	//dag:signal after=Submit
	//	type Approval[T any] struct{ Note T }
	GenericDecl

	// DuplicateDirective is a second dagen directive on one declaration.
	//
	//	//dag:step
	//	//dag:sleep
	//	func Wait(ctx context.Context, o Order) (time.Duration, error)
	DuplicateDirective

	// SpacedDirective (a warning) is a comment that looks like a directive
	// but has a space after //, so it is only a comment.
	//
	//	// dag:step
	SpacedDirective

	// UnknownWorkflow is a step whose second parameter is not a
	// //dag:workflow type of the same package, a schedule func that does
	// not return one, or a signal wait without after= in a package of
	// several workflows (it would not say which one waits for it).
	//
	//	//dag:step
	//	func Validate(ctx context.Context, o string) error
	//
	//	//dag:schedule cron="0 3 * * *"
	//	func Nightly(ctx context.Context, slot time.Time) (string, error)
	//
	//	//dag:signal // the package has workflows Order and Refund
	//	type Approval struct{ By string }
	UnknownWorkflow

	// UnknownParent is an after= name that is neither a step, a sleep nor
	// a signal wait (named by its stored name).
	//
	//	//dag:step after=Validat
	UnknownParent

	// ForeignParent is an after= name that is a step of another workflow,
	// such as a signal wait's second parent when its first put it in
	// another workflow.
	//
	//	//dag:step after=RefundValidate
	//	//dag:signal after=Submit,RefundValidate
	ForeignParent

	// SelfParent is a step that lists itself in after=.
	//
	//	//dag:step after=Charge
	//	func Charge(...)
	SelfParent

	// RepeatedParent is a parent listed twice in after=.
	//
	//	//dag:step after=Validate,Validate
	RepeatedParent

	// Cycle is a set of steps that wait for each other.
	//
	//	//dag:step after=Beta
	//	func Alpha(...)
	//	//dag:step after=Alpha
	//	func Beta(...)
	Cycle

	// DuplicateName is a stored name (of a step, a signal wait, a schedule
	// or a workflow) used twice, or the name of a signal wait that is also
	// the func name of a step (after= could not tell them apart).
	//
	//	//dag:step name="charge"
	//	func Charge(...)
	//	//dag:step name="charge"
	//	func ChargeAgain(...)
	//
	//	//dag:signal after=Submit name=Charge
	DuplicateName

	// BadName is a stored name the engine cannot store, or a blank (_)
	// func or type that generated code could not refer to, or the stored
	// name of a signal wait that generated identifiers are built from
	// (its payload type is another wait's too) and that is not a Go
	// identifier.
	//
	//	//dag:step name="@charge"
	//
	//	//dag:step
	//	func _(ctx context.Context, o Order) error
	BadName

	// NoSteps is a workflow that no step belongs to.
	//
	//	//dag:workflow
	//	type Order struct{}
	NoSteps

	// BadContext is a step, sleep, onfailure or predicate whose first
	// parameter should be context.Context and is not.
	//
	//	//dag:step
	//	func Validate(o Order) error
	BadContext

	// BadResults is a step that does not return (T, error) or error.
	//
	//	//dag:step
	//	func Validate(ctx context.Context, o Order) Validation
	BadResults

	// Variadic is a variadic step, sleep, onfailure or predicate.
	//
	//	//dag:step after=A
	//	func B(ctx context.Context, o Order, xs ...int) error
	Variadic

	// ParamCount is a step whose parameters after the input do not match
	// its parents that produce a value, one for one.
	//
	//	//dag:step after=Validate
	//	func Charge(ctx context.Context, o Order) error // no parameter for Validation
	ParamCount

	// ParamType is a parameter whose type is not its parent's output type.
	//
	//	//dag:step after=Validate
	//	func Charge(ctx context.Context, o Order, r Receipt) error // Validate returns Validation
	ParamType

	// NeedlessMaybe (a warning) is a dag.Maybe[T] parameter for a parent
	// that can never be skipped: a plain T says the same more simply.
	//
	//	//dag:step after=Validate // Validate has no skip= and no parents
	//	func Charge(ctx context.Context, o Order, v dag.Maybe[Validation]) error
	NeedlessMaybe

	// EachNotParent is an each= name that is not a parent listed in the
	// step's after=.
	//
	//	//dag:step after=Fetch each=ListImages
	EachNotParent

	// EachNotSlice is an each= parent whose output, as its children see
	// it, is not a slice: a mapped step runs once per element of it.
	//
	//	//dag:step after=Validate each=Validate // Validate returns Validation
	EachNotSlice

	// EachParamType is the parameter of a mapped step for its each=
	// parent when it is not the element type of that parent's slice, or
	// is a dag.Maybe (the each= parent is required).
	//
	//	//dag:step after=ListImages each=ListImages // ListImages returns []Image
	//	func Resize(ctx context.Context, a Album, imgs []Image) (Thumb, error)
	EachParamType

	// MappedParentType is a parameter for a mapped parent that takes the
	// type one element returns rather than the slice of all of them.
	//
	//	//dag:step after=Resize // Resize is mapped and returns Thumb per element
	//	func Publish(ctx context.Context, a Album, t Thumb) (URL, error)
	MappedParentType

	// LimitWithoutEach is limit= on a step that is not mapped: it bounds
	// how many elements of a mapped step run at once.
	//
	//	//dag:step after=ListImages limit=16
	LimitWithoutEach

	// MisplacedEach is each= or limit= on a directive other than
	// //dag:step: only steps can be mapped.
	//
	//	//dag:sleep after=ListImages each=ListImages
	//	//dag:signal after=ListImages each=ListImages
	MisplacedEach

	// BadSleep is a sleep func that does not return (time.Duration, error)
	// or (time.Time, error).
	//
	//	//dag:sleep
	//	func Wait(ctx context.Context, o Order) time.Duration
	BadSleep

	// BadOnFailure is an onfailure func that is not
	// func(context.Context, In, dag.Failure) error.
	//
	//	//dag:onfailure
	//	func Alert(ctx context.Context, o Order) error
	BadOnFailure

	// DuplicateOnFailure is a second onfailure func for one workflow.
	DuplicateOnFailure

	// Unencodable is a workflow input, step output or signal payload that
	// cannot be stored as JSON: it holds a chan, a func, an unsafe.Pointer or a
	// complex number, or an interface with methods (such as error), which
	// JSON can write but not decode back.
	//
	//	//dag:step
	//	func Open(ctx context.Context, o Order) (chan int, error)
	Unencodable

	// LostField (a warning) is a field of a workflow input or step output
	// that encoding/json skips, unexported or tagged json:"-", so it
	// arrives zeroed in the steps that read the value. Types with
	// MarshalJSON, UnmarshalJSON, MarshalText or UnmarshalText methods are
	// trusted. Each type is reported once. A json:"-" field of a type
	// that [Unencodable] describes (a func, a channel, a complex number,
	// an unsafe.Pointer, an interface with methods, or a value holding
	// one) is not reported: the tag already says it is not carried, and
	// no fix would carry it.
	//
	//	type Receipt struct {
	//		ID     string
	//		note   string // zeroed in every step after the one returning it
	//		Cancel func() `json:"-"` // not reported: JSON cannot hold a func
	//	}
	LostField

	// UndefinedPredicate is a skip= name that is not a package-level func.
	//
	//	//dag:step after=Validate skip=invlid
	UndefinedPredicate

	// BadPredicate is a skip predicate that is generic, variadic or does
	// not return bool or (bool, error).
	//
	//	func invalid(v Validation) string
	BadPredicate

	// BadPredicateParam is a predicate parameter that is neither the
	// workflow input, a context.Context nor the output of a required parent
	// of the step.
	//
	//	func invalid(r Receipt) bool // the step has no Receipt parent
	BadPredicateParam

	// AmbiguousPredicateParam is a predicate parameter whose type is
	// produced by more than one source (the input and a parent, or two
	// parents), so dagen cannot tell which to pass.
	//
	//	//dag:step after=A,B skip=p // A and B both return Score
	//	func p(s Score) bool
	AmbiguousPredicateParam

	// NameCollision is a package-level name that dagen wants to generate
	// (OrderWorkflow, OrderResult, …) and the package already declares, or
	// two steps or signal waits whose generated names (result fields, the
	// funcs that return their engine.Step, Send methods) would be the
	// same.
	//
	//	type OrderResult struct{}
	//
	//	//dag:signal after=Submit name=Approve // and a step func Approval
	//	type Approval struct{ By string }
	NameCollision

	// UnknownKeyField is a key= or per= path naming a field that its
	// struct does not have, at any step of the path.
	//
	//	//dag:workflow key=Customer.Idd // Customer has ID
	//	//dag:workflow concurrency=1 per=Custmer.ID
	UnknownKeyField

	// BadKeyPath is a key= or per= path that goes through something other
	// than a struct field: a value that is not a struct, a pointer (a nil
	// would have no key), a method, or a name promoted from two embedded
	// structs at once.
	//
	//	//dag:workflow key=Customer.ID // Customer *Customer
	BadKeyPath

	// LostKeyField is a key= or per= field that does not survive the JSON
	// round trip of the input, from which the key is read: it is
	// unexported, tagged json:"-", or left out for another field of its
	// JSON name.
	//
	//	//dag:workflow key=ref // ref string
	LostKeyField

	// BadKeyType is a key= or per= field that is neither a string nor an
	// integer (named types of them included).
	//
	//	//dag:workflow key=Amount // Amount float64
	//	//dag:workflow concurrency=1 per=Region // Region struct{...}
	BadKeyType

	// PerWithoutConcurrency is per= on a workflow without concurrency=:
	// per= says which runs one cap counts together, concurrency= is the
	// cap.
	//
	//	//dag:workflow per=CustomerID
	PerWithoutConcurrency

	// MappedSignal is each= naming a signal wait: a step cannot be mapped
	// over a signal's payload.
	//
	//	//dag:step after=Approval each=Approval // Approval is a //dag:signal
	MappedSignal

	// MissingKey is a directive without a key it needs: cron= of
	// //dag:schedule.
	//
	//	//dag:schedule tenant=system
	MissingKey

	// BadCron is a cron= expression or a zone= name of //dag:schedule
	// that the cron parser the workers use (package
	// runtime/cronexpr) rejects.
	//
	//	//dag:schedule cron="0 25 * * *"
	//	//dag:schedule cron="0 3 * * *" zone=Europe/Pariss
	BadCron

	// BadSchedule is a schedule func that is not func(context.Context,
	// time.Time) (In, error).
	//
	//	//dag:schedule cron="0 3 * * *"
	//	func Nightly(ctx context.Context) (Report, error)
	BadSchedule

	// BadChild is a //dag:child func that does not return (In, error),
	// the input of the workflow it runs.
	//
	//	//dag:child after=Charge
	//	func Ship(ctx context.Context, o Order, r Receipt) error
	BadChild

	// NotAWorkflow is a //dag:child func returning a type that is not the
	// input of a //dag:workflow, in its package or another.
	//
	//	//dag:child
	//	func Ship(ctx context.Context, o Order) (Parcel, error) // Parcel has no //dag:workflow
	NotAWorkflow

	// WorkflowCycle is a workflow that runs itself through child steps,
	// directly or through other workflows.
	//
	//	//dag:child
	//	func Ship(ctx context.Context, o Order) (Shipping, error) // Shipping has a child step returning Order
	WorkflowCycle

	// UnknownResult is result= on a workflow naming no step of it.
	//
	//	//dag:workflow result=Shp
	UnknownResult

	// ResultNoValue is result= naming a step that gives no value: a
	// sleep, a step returning only error, a child step whose workflow has
	// no result=.
	//
	//	//dag:workflow result=Wait // Wait is a //dag:sleep
	ResultNoValue

	// BadRateLimitConst is //dag:ratelimit on a constant that is not one
	// string constant: a rate limit is named by the constant's value.
	//
	//	//dag:ratelimit rate=10/s
	//	const Stripe = 1
	//
	//	//dag:ratelimit rate=10/s
	//	const Stripe, Mail = "stripe", "mail"
	BadRateLimitConst

	// BadRate is rate= of //dag:ratelimit missing, or not N/s, N/m or N/h
	// with N a positive number.
	//
	//	//dag:ratelimit burst=10
	//	//dag:ratelimit rate=100
	//	//dag:ratelimit rate=100/d
	//	//dag:ratelimit rate=0/s
	BadRate

	// BadBurst is burst= of //dag:ratelimit that is not a positive
	// integer.
	//
	//	//dag:ratelimit rate=100/s burst=0
	BadBurst

	// DuplicateRateLimit is a second //dag:ratelimit constant of a
	// package with the same value, the rate limit's name.
	//
	//	//dag:ratelimit rate=100/s
	//	const Stripe = "stripe"
	//	//dag:ratelimit rate=10/s
	//	const Payments = "stripe"
	DuplicateRateLimit

	// UnknownRateLimit is ratelimit= on a step naming no //dag:ratelimit
	// of its package.
	//
	//	//dag:step ratelimit=strpe
	UnknownRateLimit

	// WithoutRateLimit is units= or per= on a step without ratelimit=:
	// they say how a step takes tokens from its rate limit.
	//
	//	//dag:step units=2
	//	//dag:step per=Customer.ID
	WithoutRateLimit

	// MisplacedRateLimit is ratelimit=, units= or per= on a child step,
	// a sleep or a signal wait: only a //dag:step can be rate limited.
	//
	//	//dag:child ratelimit=stripe
	//	//dag:sleep after=Charge ratelimit=stripe
	MisplacedRateLimit

	// BadPriority is priority= of //dag:workflow that is not an integer
	// from 0 to engine.MaxPriority (9).
	//
	//	//dag:workflow priority=10
	BadPriority

	// Internal is a failure of dagen itself, such as generated code that
	// does not format.
	Internal

	numCodes
)

var codeNames = [...]string{
	LoadError:               "LoadError",
	MalformedDirective:      "MalformedDirective",
	SpacedList:              "SpacedList",
	NonPositiveDuration:     "NonPositiveDuration",
	UnknownDirective:        "UnknownDirective",
	UnknownKey:              "UnknownKey",
	DuplicateKey:            "DuplicateKey",
	EmptyValue:              "EmptyValue",
	MisplacedDirective:      "MisplacedDirective",
	AliasWorkflow:           "AliasWorkflow",
	MethodStep:              "MethodStep",
	GenericDecl:             "GenericDecl",
	DuplicateDirective:      "DuplicateDirective",
	SpacedDirective:         "SpacedDirective",
	UnknownWorkflow:         "UnknownWorkflow",
	UnknownParent:           "UnknownParent",
	ForeignParent:           "ForeignParent",
	SelfParent:              "SelfParent",
	RepeatedParent:          "RepeatedParent",
	Cycle:                   "Cycle",
	DuplicateName:           "DuplicateName",
	BadName:                 "BadName",
	NoSteps:                 "NoSteps",
	BadContext:              "BadContext",
	BadResults:              "BadResults",
	Variadic:                "Variadic",
	ParamCount:              "ParamCount",
	ParamType:               "ParamType",
	NeedlessMaybe:           "NeedlessMaybe",
	EachNotParent:           "EachNotParent",
	EachNotSlice:            "EachNotSlice",
	EachParamType:           "EachParamType",
	MappedParentType:        "MappedParentType",
	LimitWithoutEach:        "LimitWithoutEach",
	MisplacedEach:           "MisplacedEach",
	BadSleep:                "BadSleep",
	BadOnFailure:            "BadOnFailure",
	DuplicateOnFailure:      "DuplicateOnFailure",
	Unencodable:             "Unencodable",
	LostField:               "LostField",
	UndefinedPredicate:      "UndefinedPredicate",
	BadPredicate:            "BadPredicate",
	BadPredicateParam:       "BadPredicateParam",
	AmbiguousPredicateParam: "AmbiguousPredicateParam",
	NameCollision:           "NameCollision",
	UnknownKeyField:         "UnknownKeyField",
	BadKeyPath:              "BadKeyPath",
	LostKeyField:            "LostKeyField",
	BadKeyType:              "BadKeyType",
	PerWithoutConcurrency:   "PerWithoutConcurrency",
	MappedSignal:            "MappedSignal",
	MissingKey:              "MissingKey",
	BadCron:                 "BadCron",
	BadSchedule:             "BadSchedule",
	BadChild:                "BadChild",
	NotAWorkflow:            "NotAWorkflow",
	WorkflowCycle:           "WorkflowCycle",
	UnknownResult:           "UnknownResult",
	ResultNoValue:           "ResultNoValue",
	BadRateLimitConst:       "BadRateLimitConst",
	BadRate:                 "BadRate",
	BadBurst:                "BadBurst",
	DuplicateRateLimit:      "DuplicateRateLimit",
	UnknownRateLimit:        "UnknownRateLimit",
	WithoutRateLimit:        "WithoutRateLimit",
	MisplacedRateLimit:      "MisplacedRateLimit",
	BadPriority:             "BadPriority",
	Internal:                "Internal",
}

// String returns the code's name, such as "UnknownParent".
func (c Code) String() string {
	if c > 0 && c < numCodes {
		return codeNames[c]
	}
	return "Code(" + strconv.Itoa(int(c)) + ")"
}
