package analysis

import (
	"fmt"
	"go/constant"
	"go/types"
	"slices"
	"strconv"
	"strings"
)

// Rate limits: //dag:ratelimit rate=100/s burst=20 on a string constant
// declares a token bucket named by the constant's value, shared by every
// worker; a //dag:step with ratelimit=NAME takes units= tokens from it
// (one by default) before each attempt, from one bucket per value of the
// input field per= names, or from one bucket for all runs. The engine
// enforces them (engine.Definition.RateLimits, engine.Step.RateLimit).
// priority=N on //dag:workflow is the priority of its runs
// (engine.Definition.Priority).

// rateLimitKey is per= of a rate-limited step: the field of the input
// whose value keys the bucket. Its path follows the rules of key=.
var rateLimitKey = fieldKey{name: "per", noun: "rate limit key"}

// maxPriority is engine.MaxPriority, the highest run priority.
const maxPriority = 9

// misplacedRateKey returns the error for ratelimit=, units= or per= on a
// directive of a node that runs no code of its own to limit, and false for
// any other key or directive.
func misplacedRateKey(dir, key string) (string, bool) {
	if key != "ratelimit" && key != "units" && key != "per" {
		return "", false
	}
	var what string
	switch dir {
	case dirChild:
		what = "a child step starts a run, whose own steps can be rate limited"
	case dirSleep:
		what = "a sleep calls nothing that could be limited"
	case dirSignal:
		what = "a signal wait calls nothing that could be limited"
	default:
		return "", false
	}
	if key == "ratelimit" {
		return fmt.Sprintf("ratelimit= rate-limits a //dag:step; %s: drop ratelimit=", what), true
	}
	return fmt.Sprintf("%[1]s= goes with ratelimit=, which only a //dag:step takes; %[2]s: drop %[1]s=", key, what), true
}

// addRateLimit reads a //dag:ratelimit constant: its name, rate= and
// burst=.
func (a *analyzer) addRateLimit(f *found) {
	d := f.dir
	vs := f.val
	if len(vs.Names) != 1 {
		names := make([]string, len(vs.Names))
		for i, n := range vs.Names {
			names[i] = n.Name
		}
		a.errorf(d.Pos, d.NameEnd, BadRateLimitConst,
			"//dag:ratelimit on const %s declares one rate limit per constant: give each constant its own declaration and directive", strings.Join(names, ", "))
		return
	}
	ident := vs.Names[0]
	obj, _ := a.pkg.TypesInfo.Defs[ident].(*types.Const)
	if obj == nil {
		return // the type checker has said why
	}
	if obj.Val().Kind() != constant.String {
		a.errorf(d.Pos, d.NameEnd, BadRateLimitConst,
			"//dag:ratelimit on const %[1]s of type %[2]s: a rate limit is named by the value of a string constant; write const %[1]s = %[3]q",
			ident.Name, a.typeString(obj.Type()), strings.ToLower(ident.Name))
		return
	}
	rl := &RateLimit{
		Name:  constant.StringVal(obj.Val()),
		Const: ident.Name,
		Pos:   a.position(ident.Pos()),
	}
	ok := true
	if rl.Name == "" {
		a.errorf(ident.Pos(), ident.End(), BadRateLimitConst,
			"rate limit %s has an empty name: its name is the constant's value; write const %s = %q", ident.Name, ident.Name, strings.ToLower(ident.Name))
		ok = false
	}
	if ar, has := f.args["rate"]; has {
		rate, problem := parseRate(ar.Value)
		if problem != "" {
			a.errorf(ar.ValuePos, ar.End, BadRate, "rate=%s: %s", ar.Value, problem)
			ok = false
		}
		rl.Rate = rate
	} else if !slices.ContainsFunc(d.Args, func(ar arg) bool { return ar.Key == "rate" }) {
		a.errorf(d.Pos, d.NameEnd, BadRate,
			"//dag:ratelimit on %s has no rate=: write how many tokens the bucket gains a second, a minute or an hour, as in rate=100/s or rate=6000/m", ident.Name)
		ok = false
	} else {
		ok = false // the empty or repeated rate= is reported
	}
	if ar, has := f.args["burst"]; has {
		n, err := strconv.Atoi(ar.Value)
		if err != nil || n <= 0 {
			a.errorf(ar.ValuePos, ar.End, BadBurst,
				"burst=%s: want a positive number of tokens the bucket holds at most, such as burst=10; omit burst for one", ar.Value)
			ok = false
		}
		rl.Burst = n
	}
	for _, other := range a.rateLimits {
		if other.Name == rl.Name && rl.Name != "" {
			a.errorAt(rl.Pos, DuplicateRateLimit,
				fmt.Sprintf("rate limit %q of const %s is already declared by const %s: a name declares one rate limit; give one of them another value", rl.Name, rl.Const, other.Const),
				Related{Pos: other.Pos, Message: "first //dag:ratelimit " + strconv.Quote(other.Name) + ": const " + other.Const})
			return
		}
	}
	if ok {
		a.rateLimits = append(a.rateLimits, rl)
	} else {
		// Known, so that steps naming it are not told it is unknown,
		// but broken: they do not get it.
		a.brokenLimits = append(a.brokenLimits, rl.Name)
	}
}

// parseRate reads rate=N/s, N/m or N/h, N a positive decimal number, as
// tokens a second. It returns why the value is wrong, or "".
func parseRate(v string) (float64, string) {
	const want = "want a number of tokens a second, a minute or an hour, such as rate=100/s, rate=6000/m or rate=0.5/s"
	num, unit, found := strings.Cut(v, "/")
	if !found {
		if isDecimal(num) {
			return 0, fmt.Sprintf("say per what: write rate=%s/s, rate=%s/m or rate=%s/h", num, num, num)
		}
		return 0, want
	}
	if !isDecimal(num) {
		return 0, want
	}
	var secs float64
	switch unit {
	case "s":
		secs = 1
	case "m":
		secs = 60
	case "h":
		secs = 3600
	default:
		return 0, fmt.Sprintf("unknown unit %q: the unit is s, m or h (a second, a minute, an hour), as in rate=%s/s", unit, num)
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, want
	}
	if n <= 0 {
		return 0, fmt.Sprintf("the rate must be positive, such as rate=1/%s", unit)
	}
	return n / secs, ""
}

// isDecimal reports whether s is digits, maybe with one decimal point
// between them: 100, 0.5.
func isDecimal(s string) bool {
	whole, frac, hasPoint := strings.Cut(s, ".")
	digits := func(t string) bool {
		return t != "" && strings.Trim(t, "0123456789") == ""
	}
	return digits(whole) && (!hasPoint || digits(frac))
}

// readStepRateLimit reads ratelimit=, units= and per= of a //dag:step
// of workflow w (nil when the step's workflow is unknown).
func (a *analyzer) readStepRateLimit(f *found, s *Step, w *Workflow) {
	has := func(key string) bool {
		return slices.ContainsFunc(f.dir.Args, func(ar arg) bool { return ar.Key == key })
	}
	if !has("ratelimit") {
		for _, key := range []string{"units", "per"} {
			if ar, ok := f.args[key]; ok {
				a.errorf(ar.KeyPos, ar.End, WithoutRateLimit,
					"%[1]s=%[2]s on %[3]s needs ratelimit=: on a step, %[1]s= says %[4]s of a rate limit; add ratelimit=NAME, a //dag:ratelimit of this package, or drop %[1]s=",
					key, ar.Value, s.Func, map[string]string{"units": "how many tokens each attempt takes", "per": "which runs share a bucket"}[key])
			}
		}
		return
	}
	ar, ok := f.args["ratelimit"]
	if !ok {
		return // empty or repeated: reported
	}
	limit := a.rateLimit(ar.Value)
	if limit == nil {
		if slices.Contains(a.brokenLimits, ar.Value) {
			return
		}
		a.unknownRateLimit(ar, s)
	}
	rl := &StepRateLimit{Limit: limit}
	if ua, ok := f.args["units"]; ok {
		n, err := strconv.Atoi(ua.Value)
		switch {
		case err != nil || n <= 0:
			a.errorf(ua.ValuePos, ua.End, MalformedDirective,
				"units=%s: want a positive number of tokens each attempt takes, such as units=2; omit units for one", ua.Value)
		case limit != nil && n > max(limit.Burst, 1):
			a.errorf(ua.ValuePos, ua.End, MalformedDirective,
				"units=%d is more than rate limit %s holds at once (burst=%d): an attempt of %s could never get its tokens; raise burst= on const %s, or lower units=",
				n, limit.Name, max(limit.Burst, 1), s.Func, limit.Const)
		default:
			rl.Units = n
		}
	}
	if w != nil {
		rl.Key = a.readFieldKey(f, w, rateLimitKey)
	}
	if limit != nil {
		s.RateLimit = rl
	}
}

// rateLimit returns the rate limit of the package named name, or nil.
func (a *analyzer) rateLimit(name string) *RateLimit {
	for _, rl := range a.rateLimits {
		if rl.Name == name {
			return rl
		}
	}
	return nil
}

// unknownRateLimit reports ratelimit= naming no //dag:ratelimit of the
// package.
func (a *analyzer) unknownRateLimit(ar arg, s *Step) {
	for _, rl := range a.rateLimits {
		if rl.Const == ar.Value {
			a.errorf(ar.ValuePos, ar.End, UnknownRateLimit,
				"ratelimit=%s of %s names the constant; a rate limit is named by its value: write ratelimit=%s", ar.Value, s.Func, rl.Name)
			return
		}
	}
	names := make([]string, len(a.rateLimits))
	for i, rl := range a.rateLimits {
		names[i] = rl.Name
	}
	msg := fmt.Sprintf("unknown rate limit %s in ratelimit= of %s", ar.Value, s.Func)
	if sug := suggest(ar.Value, names); sug != "" {
		msg += ": did you mean " + sug + "? Or declare it with //dag:ratelimit on a string constant"
	} else {
		msg += fmt.Sprintf(": declare it with //dag:ratelimit on a string constant of this package whose value is %q", ar.Value)
	}
	a.errorf(ar.ValuePos, ar.End, UnknownRateLimit, "%s", msg)
}

// readPriority reads priority= of a workflow.
func (a *analyzer) readPriority(f *found, w *Workflow) {
	ar, ok := f.args["priority"]
	if !ok {
		return
	}
	n, err := strconv.Atoi(ar.Value)
	if err != nil || n < 0 || n > maxPriority {
		a.errorf(ar.ValuePos, ar.End, BadPriority,
			"priority=%s: a run priority is an integer from 0 (the default) to %d (engine.MaxPriority), such as priority=5", ar.Value, maxPriority)
		return
	}
	w.Priority = n
}
