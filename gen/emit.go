package gen

import (
	"bytes"
	"context"
	"fmt"
	"go/types"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dave/jennifer/jen"

	"github.com/dagenhq/dagen/internal/analysis"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
)

const (
	enginePath = "github.com/dagenhq/dagen/runtime/engine"
	storePath  = "github.com/dagenhq/dagen/runtime/store"
	dagPath    = analysis.DagPkgPath
	pgxPath    = "github.com/jackc/pgx/v5"
)

// signatureType names the type that holds the signature a user func was
// generated for. The name is what the compiler prints when the func no
// longer has that signature ("cannot use Validate (value of type ...) as
// _dagenSignature_Validate_changed_run_go_generate value"), so it says what
// to do. It is a defined type rather than an alias because compilers that
// do not track aliases would print the func type instead of the name.
func signatureType(fn string) string { return "_dagenSignature_" + fn + "_changed_run_go_generate" }

// emitter writes the dag_gen.go of one package.
type emitter struct {
	pkg   *analysis.Package
	f     *jen.File
	taken map[string]bool   // package-scope and import names locals must avoid
	local map[string]string // chosen local names, by base name
	// declared holds the funcs whose signature type is already emitted: a
	// predicate may serve several workflows of the package.
	declared map[string]bool
	// chunks holds the functions a large definition calls, written after
	// it (see chunkedDefinition).
	chunks []jen.Code
}

func emitPackage(p *analysis.Package) ([]byte, error) {
	f := jen.NewFilePathName(p.Path, p.Name)
	cons, err := buildConstraint(p)
	if err != nil {
		return nil, err
	}
	if cons == nil {
		f.HeaderComment(analysis.GeneratedHeader)
	} else {
		// One literal comment: jennifer would not leave the blank line
		// that separates a build constraint from the comments above it.
		f.HeaderComment("// " + analysis.GeneratedHeader + "\n\n" + goBuildLine(cons))
	}
	g := &emitter{pkg: p, f: f, taken: map[string]bool{}, local: map[string]string{}, declared: map[string]bool{}}
	if p.Types != nil {
		for _, name := range p.Types.Scope().Names() {
			// Names with the _dagen prefix are dagen's own: those in
			// scope come from the dag_gen.go being replaced, and taking
			// them would rename the new file's, every other run.
			if !strings.HasPrefix(name, "_dagen") {
				g.taken[name] = true
			}
		}
	}
	g.imports()
	for i, w := range p.Workflows {
		if i > 0 {
			f.Line()
		}
		g.workflow(w)
	}
	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	return groupImports(buf.Bytes())
}

// imports names every package the file may refer to, so that jennifer
// never guesses a name from a path (pgx/v5 is pgx, not v5), and renames
// an import whose name the package already declares.
func (g *emitter) imports() {
	paths := map[string]string{"context": "context", "fmt": "fmt", "strconv": "strconv", "time": "time", enginePath: "engine", dagPath: "dag", pgxPath: "pgx"}
	for _, w := range g.pkg.Workflows {
		collectPkgs(w.Input, paths)
		for _, s := range w.Steps {
			if s.Kind == analysis.KindSignal {
				collectPkgs(s.Output, paths) // a wait has no func
				continue
			}
			collectPkgs(s.Sig, paths)
			if s.Kind == analysis.KindChild {
				collectPkgs(s.Output, paths) // the child's result, in the result struct
			}
			for _, p := range s.Skip {
				collectPkgs(p.Sig, paths)
			}
		}
		if w.OnFailureSig != nil {
			collectPkgs(w.OnFailureSig, paths)
		}
		for _, sc := range w.Schedules {
			collectPkgs(sc.Sig, paths)
			if sc.Catchup != "" {
				// Only then: a package of the user's named store would
				// otherwise be renamed for an import the file lacks.
				paths[storePath] = "store"
			}
		}
	}
	delete(paths, g.pkg.Path)
	sorted := make([]string, 0, len(paths))
	for path := range paths {
		sorted = append(sorted, path)
	}
	sort.Strings(sorted)
	// Packages that share a name are all aliased by their paths, as is a
	// package named like the one generated: model.Receipt must not
	// silently mean one model package here and another there.
	count := map[string]int{g.pkg.Name: 1}
	for _, name := range paths {
		count[name]++
	}
	for _, path := range sorted {
		name := paths[path]
		if count[name] > 1 {
			alias := pathAlias(path, name, g.taken)
			g.f.ImportAlias(path, alias)
			g.taken[alias] = true
			continue
		}
		if !g.taken[name] {
			g.f.ImportName(path, name)
			g.taken[name] = true
			continue
		}
		alias := name + "pkg"
		for i := 2; g.taken[alias]; i++ {
			alias = name + "pkg" + strconv.Itoa(i)
		}
		g.f.ImportAlias(path, alias)
		g.taken[alias] = true
	}
}

// pathAlias returns an import name for the package at path named name
// that says where it comes from: the name prefixed with the path's
// elements above the package's directory, as few as make it untaken
// (example.com/shop/model is shopmodel), or numbered when they run out.
func pathAlias(path, name string, taken map[string]bool) string {
	elems := strings.Split(path, "/")
	// Drop the directory, and a major version suffix (pgx/v5) with it.
	if n := len(elems); n > 1 && majorVersion(elems[n-1]) {
		elems = elems[:n-1]
	}
	elems = elems[:len(elems)-1]
	alias := name
	for i := len(elems) - 1; i >= 0; i-- {
		if e := identPart(elems[i]); e != "" {
			alias = e + alias
			if !taken[alias] && (alias[0] < '0' || alias[0] > '9') {
				return alias
			}
		}
	}
	if alias[0] >= '0' && alias[0] <= '9' {
		alias = "pkg" + alias
	}
	base := alias
	for i := 2; taken[alias]; i++ {
		alias = base + strconv.Itoa(i)
	}
	return alias
}

// majorVersion reports whether a path element is a major version suffix
// such as v2.
func majorVersion(e string) bool {
	if len(e) < 2 || e[0] != 'v' {
		return false
	}
	_, err := strconv.Atoi(e[1:])
	return err == nil
}

// identPart returns the lower-case letters and digits of a path element,
// so that example-corp.com gives examplecorpcom.
func identPart(e string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(e) {
		if r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// collectPkgs adds the packages named in t to paths.
func collectPkgs(t types.Type, paths map[string]string) {
	seen := map[types.Type]bool{}
	var walk func(t types.Type)
	add := func(p *types.Package) {
		if p != nil {
			paths[p.Path()] = p.Name()
		}
	}
	walk = func(t types.Type) {
		if t == nil || seen[t] {
			return
		}
		seen[t] = true
		switch t := t.(type) {
		case *types.Alias:
			add(t.Obj().Pkg())
			for a := range t.TypeArgs().Types() {
				walk(a)
			}
		case *types.Named:
			add(t.Obj().Pkg())
			for a := range t.TypeArgs().Types() {
				walk(a)
			}
		case *types.Basic:
			if t.Kind() == types.UnsafePointer {
				paths["unsafe"] = "unsafe"
			}
		case *types.Pointer:
			walk(t.Elem())
		case *types.Slice:
			walk(t.Elem())
		case *types.Array:
			walk(t.Elem())
		case *types.Map:
			walk(t.Key())
			walk(t.Elem())
		case *types.Chan:
			walk(t.Elem())
		case *types.Struct:
			for i := range t.NumFields() {
				walk(t.Field(i).Type())
			}
		case *types.Interface:
			for i := range t.NumEmbeddeds() {
				walk(t.EmbeddedType(i))
			}
			for i := range t.NumExplicitMethods() {
				walk(t.ExplicitMethod(i).Type())
			}
		case *types.Signature:
			walk(t.Params())
			walk(t.Results())
		case *types.Tuple:
			for v := range t.Variables() {
				walk(v.Type())
			}
		}
	}
	walk(t)
}

// name returns the local identifier for base, renamed once per package
// when base is a package-level name that a local would shadow.
func (g *emitter) name(base string) string {
	if n, ok := g.local[base]; ok {
		return n
	}
	n := base
	for i := 1; g.taken[n]; i++ {
		n = base + strconv.Itoa(i)
	}
	g.taken[n] = true
	g.local[base] = n
	return n
}

func (g *emitter) parentVar(i int) string { return g.name("p" + strconv.Itoa(i)) }

// typ renders a Go type.
func (g *emitter) typ(t types.Type) jen.Code {
	switch t := t.(type) {
	case *types.Alias:
		return g.qual(t.Obj(), t.TypeArgs())
	case *types.Named:
		return g.qual(t.Obj(), t.TypeArgs())
	case *types.Basic:
		if t.Kind() == types.UnsafePointer {
			return jen.Qual("unsafe", "Pointer")
		}
		return jen.Id(t.Name())
	case *types.Pointer:
		return jen.Op("*").Add(g.typ(t.Elem()))
	case *types.Slice:
		return jen.Index().Add(g.typ(t.Elem()))
	case *types.Array:
		return jen.Index(jen.Lit(int(t.Len()))).Add(g.typ(t.Elem()))
	case *types.Map:
		return jen.Map(g.typ(t.Key())).Add(g.typ(t.Elem()))
	case *types.Chan:
		switch t.Dir() {
		case types.SendOnly:
			return jen.Chan().Op("<-").Add(g.typ(t.Elem()))
		case types.RecvOnly:
			return jen.Op("<-").Chan().Add(g.typ(t.Elem()))
		}
		return jen.Chan().Add(g.typ(t.Elem()))
	case *types.Struct:
		fields := make([]jen.Code, t.NumFields())
		for i := range t.NumFields() {
			f := t.Field(i)
			var c *jen.Statement
			if f.Embedded() {
				c = jen.Add(g.typ(f.Type()))
			} else {
				c = jen.Id(f.Name()).Add(g.typ(f.Type()))
			}
			if tag := t.Tag(i); tag != "" {
				c = c.Lit(tag)
			}
			fields[i] = c
		}
		return jen.Struct(fields...)
	case *types.Interface:
		var elems []jen.Code
		for i := range t.NumEmbeddeds() {
			elems = append(elems, g.typ(t.EmbeddedType(i)))
		}
		for i := range t.NumExplicitMethods() {
			m := t.ExplicitMethod(i)
			sig := m.Type().(*types.Signature)
			elems = append(elems, jen.Id(m.Name()).Params(g.tuple(sig.Params(), sig.Variadic())...).Params(g.tuple(sig.Results(), false)...))
		}
		return jen.Interface(elems...)
	case *types.Signature:
		return g.funcType(t)
	}
	return jen.Id(t.String())
}

func (g *emitter) qual(obj *types.TypeName, args *types.TypeList) jen.Code {
	var c *jen.Statement
	if obj.Pkg() == nil {
		c = jen.Id(obj.Name()) // error, any, comparable
	} else {
		c = jen.Qual(obj.Pkg().Path(), obj.Name())
	}
	if args.Len() > 0 {
		codes := make([]jen.Code, 0, args.Len())
		for a := range args.Types() {
			codes = append(codes, g.typ(a))
		}
		c = c.Types(codes...)
	}
	return c
}

func (g *emitter) tuple(t *types.Tuple, variadic bool) []jen.Code {
	out := make([]jen.Code, t.Len())
	for i := range t.Len() {
		vt := t.At(i).Type()
		if variadic && i == t.Len()-1 {
			out[i] = jen.Op("...").Add(g.typ(vt.(*types.Slice).Elem()))
			continue
		}
		out[i] = g.typ(vt)
	}
	return out
}

// funcType renders a signature as a func type without parameter names.
func (g *emitter) funcType(sig *types.Signature) *jen.Statement {
	c := jen.Func().Params(g.tuple(sig.Params(), sig.Variadic())...)
	switch res := sig.Results(); res.Len() {
	case 0:
		return c
	case 1:
		return c.Add(g.typ(res.At(0).Type()))
	default:
		return c.Params(g.tuple(res, false)...)
	}
}

// ctxParam is "ctx context.Context".
func (g *emitter) ctxParam() jen.Code { return jen.Id(g.name("ctx")).Qual("context", "Context") }

// inParam is "in engine.StepInput".
func (g *emitter) inParam() jen.Code { return jen.Id(g.name("in")).Qual(enginePath, "StepInput") }

func (g *emitter) workflow(w *analysis.Workflow) {
	n := analysis.GoName(w)
	fp := fingerprint(w)
	g.f.Commentf("%sFingerprint identifies workflow %q as generated (its steps, edges and types):", n, w.Name)
	g.f.Commentf("%sDefinition().Fingerprint() returns it, and runs record it.", n)
	g.f.Const().Id(n + "Fingerprint").Op("=").Lit(fp)
	g.f.Line()
	if g.signatureTypes(w) {
		g.f.Line()
	}
	g.definition(w)
	g.f.Line()
	g.handle(w)
	g.f.Line()
	g.result(w)
}

// fingerprint computes what engine.Definition.Fingerprint will say about
// the generated definition, from the same shape.
func fingerprint(w *analysis.Workflow) string { return Skeleton(w).Fingerprint() }

// Skeleton returns the definition the generated code builds for w without
// its funcs: names, kinds, edges, maps (each=, limit=) and types, all
// that signatures and the fingerprint are computed from
// ([engine.Definition.Signatures]).
func Skeleton(w *analysis.Workflow) *engine.Definition {
	def := &engine.Definition{Name: w.Name, InputType: typeID(w.Input)}
	for _, s := range w.Steps {
		step := engine.Step{Name: s.Name, OutputType: typeID(s.Output)}
		switch s.Kind {
		case analysis.KindSleep:
			step.Kind = engine.KindSleep
		case analysis.KindSignal:
			step.Kind = engine.KindSignal
		case analysis.KindChild:
			step.Kind = engine.KindChild
			step.Child = engineChild(s.Child)
		}
		for _, e := range s.Parents {
			step.Parents = append(step.Parents, engine.Parent{Name: e.Parent.Name, Optional: e.Optional})
		}
		if s.Each != nil {
			step.Each, step.Limit = s.Each.Parent.Name, s.Limit
		}
		def.Steps = append(def.Steps, step)
	}
	if w.OnFailure != "" {
		def.OnFailure = func(context.Context, engine.StepInput, dag.Failure) error { return nil }
	}
	return def
}

// engineChild is the engine.Child of a child step.
func engineChild(c *analysis.Child) *engine.Child {
	return &engine.Child{Workflow: c.Workflow, InputType: typeID(c.Input), Result: c.Result}
}

// typeID identifies a type in signatures: types.TypeString with full
// package paths ("example.com/shop.Receipt", "[]example.com/shop.Item"),
// or "" for no type.
func typeID(t types.Type) string {
	if t == nil {
		return ""
	}
	return types.TypeString(t, func(p *types.Package) string { return p.Path() })
}

func (g *emitter) definition(w *analysis.Workflow) {
	n := analysis.GoName(w)
	def, fns, funcsType := g.name("def"), g.name("fns"), g.name("_dagen"+n+"Funcs")
	var fields fieldList
	fields.add("Name", jen.Lit(w.Name))
	fields.add("InputType", jen.Lit(typeID(w.Input)))
	fields.add("Steps", jen.Make(jen.Index().Qual(enginePath, "Step"), jen.Lit(0), jen.Lit(len(w.Steps))))
	if w.OnFailure != "" {
		fields.add("OnFailure", g.onFailure(w))
	}
	if w.Key != nil {
		fields.add("Key", g.key(w, w.Key))
	}
	if w.Concurrency > 0 {
		fields.add("Concurrency", jen.Lit(w.Concurrency))
	}
	if w.ConcurrencyKey != nil {
		fields.add("ConcurrencyKey", g.key(w, w.ConcurrencyKey))
	}
	if w.Timeout > 0 {
		fields.add("Timeout", duration(w.Timeout))
	}
	if w.Priority > 0 {
		fields.add("Priority", jen.Lit(w.Priority))
	}
	if limits := w.RateLimits(); len(limits) > 0 {
		fields.add("RateLimits", jen.Index().Qual(enginePath, "RateLimit").CustomFunc(
			jen.Options{Open: "{", Close: "}", Separator: ",", Multi: true}, func(grp *jen.Group) {
				for _, rl := range limits {
					var limit fieldList
					limit.add("Name", jen.Lit(rl.Name))
					limit.add("Rate", jen.Lit(rl.Rate))
					if rl.Burst > 0 {
						limit.add("Burst", jen.Lit(rl.Burst))
					}
					grp.Values(limit...)
				}
			}))
	}
	if len(w.Schedules) > 0 {
		fields.add("Schedules", jen.Index().Qual(enginePath, "ScheduleDef").Custom(
			jen.Options{Open: "{", Close: "}", Separator: ",", Multi: true}, g.schedules(w)...))
	}
	stepFuncs := make([]string, len(w.Steps))
	for i, s := range w.Steps {
		stepFuncs[i] = g.name("_dagen" + n + "_" + s.Ident())
	}

	// A workflow of signal waits alone calls no func of the user's: it
	// has no guards and no funcs to pass.
	ufs := userFuncs(w)
	if len(ufs) > 0 {
		g.f.Commentf("%s holds the funcs of workflow %q with the signatures they", funcsType, w.Name)
		g.f.Commentf("were generated for. %sDefinition fills it from its guards; the step", n)
		g.f.Comment("funcs below call the funcs through it.")
		g.f.Type().Id(funcsType).StructFunc(func(grp *jen.Group) {
			for _, fn := range ufs {
				grp.Id(g.fnVar(fn.name)).Id(signatureType(fn.name))
			}
		})
		g.f.Line()
	}

	// The definition assigns the guards and calls one small func per step
	// rather than holding every step's closures itself: the compiler's
	// cost of a function grows faster than its size, and a definition of
	// thousands of closures took minutes to build. One statement per step
	// rather than one literal holding them all, because go/printer
	// measures nested literals again at every level.
	appendStep := func(i int) jen.Code {
		var args []jen.Code
		if w.Steps[i].Kind != analysis.KindSignal {
			args = append(args, jen.Id(fns)) // a signal wait calls no func
		}
		return jen.Id(def).Dot("Steps").Op("=").Append(jen.Id(def).Dot("Steps"), jen.Id(stepFuncs[i]).Call(args...))
	}
	var body []jen.Code
	chunked := len(ufs) > definitionChunk || len(w.Steps) > definitionChunk
	if !chunked {
		if len(ufs) > 0 {
			body = g.guards(ufs)
			var funcs fieldList
			for _, fn := range ufs {
				funcs.add(g.fnVar(fn.name), jen.Id(g.fnVar(fn.name)))
			}
			body = append(body, jen.Id(fns).Op(":=").Op("&").Id(funcsType).Add(funcs.values()))
		}
		body = append(body, jen.Id(def).Op(":=").Op("&").Qual(enginePath, "Definition").Add(fields.values()))
		for i := range w.Steps {
			body = append(body, appendStep(i))
		}
	} else {
		body = g.chunkedDefinition(w, ufs, fields, appendStep)
	}
	body = append(body, jen.Return(jen.Id(def)))
	g.f.Commentf("%sDefinition returns the engine definition of workflow %q.", n, w.Name)
	g.f.Commentf("%s registers it and returns a typed handle.", analysis.NewFuncName(w))
	g.f.Func().Id(n+"Definition").Params().Op("*").Qual(enginePath, "Definition").Block(body...)
	g.f.Add(g.chunks...)
	g.chunks = nil

	for i, s := range w.Steps {
		g.f.Line()
		if s.Kind == analysis.KindSignal {
			g.f.Commentf("%s returns signal wait %q of workflow %q.", stepFuncs[i], s.Name, w.Name)
			g.f.Func().Id(stepFuncs[i]).Params().Qual(enginePath, "Step").Block(
				jen.Return(jen.Qual(enginePath, "Step").Add(g.signalStep(s))),
			)
			continue
		}
		if s.Kind == analysis.KindChild {
			g.f.Commentf("%s returns child step %q of workflow %q, which runs workflow %q.", stepFuncs[i], s.Name, w.Name, s.Child.Workflow)
		} else {
			g.f.Commentf("%s returns step %q of workflow %q.", stepFuncs[i], s.Name, w.Name)
		}
		if chunked {
			// A chunk is small enough for the compiler to inline the step
			// funcs it calls, and every inlined copy of one compiles its
			// closure again: a second closure per step.
			g.f.Comment("//go:noinline")
		}
		g.f.Func().Id(stepFuncs[i]).Params(jen.Id(fns).Op("*").Id(funcsType)).Qual(enginePath, "Step").Block(
			jen.Return(jen.Qual(enginePath, "Step").Add(g.step(w, s))),
		)
	}
}

// definitionChunk is the most guards, and the most steps, one function
// of a definition holds. A larger workflow's definition calls a function
// per chunk of its guards, then one per chunk of its steps: the compiler's
// cost of a function grows faster than its length (register allocation
// and the prove pass over one block per append), and a definition of
// 10,000 steps in one function took most of its package's build (see
// docs/performance.md, "Definitions in chunks").
const definitionChunk = 256

// chunkedDefinition returns the body of a large workflow's definition,
// up to its return, and keeps the functions it calls in g.chunks: one
// that fills the funcs struct through the guards of up to
// definitionChunk funcs, then one that appends up to definitionChunk
// steps, each as appendStep writes it.
func (g *emitter) chunkedDefinition(w *analysis.Workflow, ufs []userFunc, fields fieldList, appendStep func(i int) jen.Code) []jen.Code {
	n := analysis.GoName(w)
	def, fns, funcsType := g.name("def"), g.name("fns"), g.name("_dagen"+n+"Funcs")
	var body []jen.Code
	stepParams := []jen.Code{jen.Id(def).Op("*").Qual(enginePath, "Definition")}
	stepArgs := []jen.Code{jen.Id(def)}
	if len(ufs) > 0 {
		body = append(body, jen.Id(fns).Op(":=").Op("&").Id(funcsType).Values())
		stepParams = append(stepParams, jen.Id(fns).Op("*").Id(funcsType))
		stepArgs = append(stepArgs, jen.Id(fns))
	}
	for k := 0; k < len(ufs); k += definitionChunk {
		part := ufs[k:min(k+definitionChunk, len(ufs))]
		name := g.name(fmt.Sprintf("_dagen%sGuards%d", n, k/definitionChunk))
		fill := g.guards(part)
		for _, fn := range part {
			fill = append(fill, jen.Id(fns).Dot(g.fnVar(fn.name)).Op("=").Id(g.fnVar(fn.name)))
		}
		g.chunks = append(g.chunks, jen.Line(),
			jen.Commentf("%s fills funcs %d to %d of workflow %q, each through its guard.", name, k+1, k+len(part), w.Name), jen.Line(),
			jen.Func().Id(name).Params(jen.Id(fns).Op("*").Id(funcsType)).Block(fill...), jen.Line())
		body = append(body, jen.Id(name).Call(jen.Id(fns)))
	}
	body = append(body, jen.Id(def).Op(":=").Op("&").Qual(enginePath, "Definition").Add(fields.values()))
	for k := 0; k < len(w.Steps); k += definitionChunk {
		end := min(k+definitionChunk, len(w.Steps))
		name := g.name(fmt.Sprintf("_dagen%sSteps%d", n, k/definitionChunk))
		var appends []jen.Code
		for i := k; i < end; i++ {
			appends = append(appends, appendStep(i))
		}
		g.chunks = append(g.chunks, jen.Line(),
			jen.Commentf("%s appends steps %d to %d of workflow %q to %s.", name, k+1, end, w.Name, def), jen.Line(),
			jen.Func().Id(name).Params(stepParams...).Block(appends...), jen.Line())
		body = append(body, jen.Id(name).Call(stepArgs...))
	}
	return body
}

// schedules returns the engine.ScheduleDef literals of w's schedules.
// Zone, Tenant and Catchup are left out when the directive leaves them
// out, for the engine's defaults (UTC, "schedule", latest).
func (g *emitter) schedules(w *analysis.Workflow) []jen.Code {
	out := make([]jen.Code, len(w.Schedules))
	for i, sc := range w.Schedules {
		var fields fieldList
		fields.add("Name", jen.Lit(sc.Name))
		fields.add("Cron", jen.Lit(sc.Cron))
		if sc.Zone != "" {
			fields.add("Zone", jen.Lit(sc.Zone))
		}
		if sc.Tenant != "" {
			fields.add("Tenant", jen.Lit(sc.Tenant))
		}
		if sc.Catchup != "" {
			fields.add("Catchup", jen.Qual(storePath, catchupConst(sc.Catchup)))
		}
		ctx, slot, in, err := g.name("ctx"), g.name("slot"), g.name("in"), g.name("err")
		fields.add("Input", jen.Func().Params(jen.Id(ctx).Qual("context", "Context"), jen.Id(slot).Qual("time", "Time")).Params(jen.Index().Byte(), jen.Error()).Block(
			jen.List(jen.Id(in), jen.Id(err)).Op(":=").Add(g.callee(sc.Func)).Call(jen.Id(ctx), jen.Id(slot)),
			g.checkErr(jen.Nil()),
			jen.Return(jen.Qual(enginePath, "Encode").Call(jen.Id(in))),
		))
		out[i] = fields.values()
	}
	return out
}

// catchupConst names the store constant of a catchup= value the analysis
// accepted.
func catchupConst(c string) string {
	switch c {
	case "all":
		return "CatchupAll"
	case "none":
		return "CatchupNone"
	}
	return "CatchupLatest"
}

// signalStep is the engine.Step literal of a signal wait: no func, and
// the payload type as its output.
func (g *emitter) signalStep(s *analysis.Step) jen.Code {
	var fields fieldList
	fields.add("Name", jen.Lit(s.Name))
	fields.add("Kind", jen.Qual(enginePath, "KindSignal"))
	fields.add("OutputType", jen.Lit(typeID(s.Output)))
	if len(s.Parents) > 0 {
		fields.add("Parents", jen.Index().Qual(enginePath, "Parent").ValuesFunc(func(grp *jen.Group) {
			for _, e := range s.Parents {
				grp.Values(jen.Dict{jen.Id("Name"): jen.Lit(e.Parent.Name)})
			}
		}))
	}
	if s.SignalTimeout > 0 {
		fields.add("SignalTimeout", duration(s.SignalTimeout))
	}
	return fields.values()
}

// fieldList is a composite literal's fields, kept in the order they are
// added and rendered one per line (jen.Dict sorts its keys).
type fieldList []jen.Code

func (l *fieldList) add(name string, v jen.Code) {
	*l = append(*l, jen.Id(name).Op(":").Add(v))
}

func (l fieldList) values() *jen.Statement {
	return jen.Custom(jen.Options{Open: "{", Close: "}", Separator: ",", Multi: true}, l...)
}

// decodeInput is "input, err := engine.Input[In](in); if err != nil { return zero..., err }".
func (g *emitter) decodeInput(w *analysis.Workflow, zero ...jen.Code) []jen.Code {
	return []jen.Code{
		jen.List(jen.Id(g.name("input")), jen.Id(g.name("err"))).Op(":=").Qual(enginePath, "Input").Types(g.typ(w.Input)).Call(jen.Id(g.name("in"))),
		g.checkErr(zero...),
	}
}

func (g *emitter) checkErr(zero ...jen.Code) jen.Code {
	return jen.If(jen.Id(g.name("err")).Op("!=").Nil()).Block(jen.Return(append(zero, jen.Id(g.name("err")))...))
}

// decodeParent decodes the output of parent i, as type t, into its local
// variable. It declares with := even after the input's :=, which is legal
// because the parent's variable is new.
//
// The type is the parent's [analysis.Step.ResultType] (a mapped parent's
// slice of outputs), except in the Run of a mapped step, which reads its
// each= parent as one element: the store hands each element task its
// element as that parent's output.
func (g *emitter) decodeParent(s *analysis.Step, i int, t types.Type, zero ...jen.Code) []jen.Code {
	e := s.Parents[i]
	fn := "ParentOutput"
	if e.Optional {
		fn = "ParentMaybe"
	}
	return []jen.Code{
		jen.List(jen.Id(g.parentVar(i)), jen.Id(g.name("err"))).Op(":=").Qual(enginePath, fn).Types(g.typ(t)).Call(jen.Id(g.name("in")), jen.Lit(e.Parent.Name)),
		g.checkErr(zero...),
	}
}

func (g *emitter) step(w *analysis.Workflow, s *analysis.Step) jen.Code {
	var fields fieldList
	field := fields.add
	field("Name", jen.Lit(s.Name))
	switch s.Kind {
	case analysis.KindSleep:
		field("Kind", jen.Qual(enginePath, "KindSleep"))
	case analysis.KindChild:
		field("Kind", jen.Qual(enginePath, "KindChild"))
	}
	if s.Output != nil {
		field("OutputType", jen.Lit(typeID(s.Output)))
	}
	if len(s.Parents) > 0 {
		field("Parents", jen.Index().Qual(enginePath, "Parent").ValuesFunc(func(grp *jen.Group) {
			for _, e := range s.Parents {
				d := jen.Dict{jen.Id("Name"): jen.Lit(e.Parent.Name)}
				if e.Optional {
					d[jen.Id("Optional")] = jen.True()
				}
				grp.Values(d)
			}
		}))
	}
	if s.Each != nil {
		field("Each", jen.Lit(s.Each.Parent.Name))
		if s.Limit > 0 {
			field("Limit", jen.Lit(s.Limit))
		}
	}
	if len(s.Skip) > 0 {
		field("Skip", jen.Index().Qual(enginePath, "Predicate").ValuesFunc(func(grp *jen.Group) {
			for _, p := range s.Skip {
				grp.Add(g.predicate(w, s, p))
			}
		}))
	}
	if s.MaxRetries > 0 || s.Backoff > 0 || s.MaxBackoff > 0 {
		d := jen.Dict{}
		if s.MaxRetries > 0 {
			d[jen.Id("MaxRetries")] = jen.Lit(s.MaxRetries)
		}
		if s.Backoff > 0 {
			d[jen.Id("Backoff")] = duration(s.Backoff)
		}
		if s.MaxBackoff > 0 {
			d[jen.Id("MaxBackoff")] = duration(s.MaxBackoff)
		}
		field("Retry", jen.Qual(enginePath, "RetryPolicy").Values(d))
	}
	if s.Timeout > 0 {
		field("Timeout", duration(s.Timeout))
	}
	if rl := s.RateLimit; rl != nil {
		var limit fieldList
		limit.add("Name", jen.Lit(rl.Limit.Name))
		if rl.Units > 1 {
			limit.add("Units", jen.Lit(rl.Units))
		}
		if rl.Key != nil {
			limit.add("Key", g.key(w, rl.Key))
		}
		field("RateLimit", jen.Op("&").Qual(enginePath, "StepRateLimit").Add(limit.values()))
	}
	if s.Kind == analysis.KindChild {
		c := engineChild(s.Child)
		var child fieldList
		child.add("Workflow", jen.Lit(c.Workflow))
		child.add("InputType", jen.Lit(c.InputType))
		if c.Result != "" {
			child.add("Result", jen.Lit(c.Result))
		}
		field("Child", jen.Op("&").Qual(enginePath, "Child").Add(child.values()))
	}
	if s.Kind == analysis.KindSleep {
		field("Sleep", g.sleepAdapter(w, s))
	} else {
		field("Run", g.runAdapter(w, s))
	}
	return fields.values()
}

// callArgs returns ctx, input and the parent locals in parameter order,
// with the statements that decode them.
func (g *emitter) callArgs(w *analysis.Workflow, s *analysis.Step, zero ...jen.Code) (body, args []jen.Code) {
	body = g.decodeInput(w, zero...)
	args = []jen.Code{jen.Id(g.name("ctx")), jen.Id(g.name("input"))}
	var idx []int
	for i, e := range s.Parents {
		if e.Param >= 0 {
			idx = append(idx, i)
		}
	}
	for _, i := range idx {
		body = append(body, g.decodeParent(s, i, s.ParamType(s.Parents[i]), zero...)...)
		args = append(args, jen.Id(g.parentVar(i)))
	}
	return body, args
}

func (g *emitter) runAdapter(w *analysis.Workflow, s *analysis.Step) jen.Code {
	if s.Kind == analysis.KindStep && !readsParents(s) {
		// The engine's adapter of the signature, not a closure: the
		// compiler builds a closure per step, which made most of a large
		// workflow's build (see docs/performance.md, "One adapter per
		// step signature").
		if s.Output == nil {
			return jen.Qual(enginePath, "StepRun").Types(g.typ(w.Input)).Call(g.callee(s.Func))
		}
		return jen.Qual(enginePath, "StepRunOutput").Types(g.typ(w.Input), g.typ(s.Output)).Call(g.callee(s.Func))
	}
	body, args := g.callArgs(w, s, jen.Nil())
	call := g.callee(s.Func).Call(args...)
	if s.Output == nil && s.Kind != analysis.KindChild {
		body = append(body, jen.Return(jen.Nil(), call))
	} else {
		out := g.name("out")
		body = append(body,
			jen.List(jen.Id(out), jen.Id(g.name("err"))).Op(":=").Add(call),
			g.checkErr(jen.Nil()),
			jen.Return(jen.Qual(enginePath, "Encode").Call(jen.Id(out))),
		)
	}
	return jen.Func().Params(g.ctxParam(), g.inParam()).Params(jen.Index().Byte(), jen.Error()).Block(body...)
}

// readsParents reports whether s's func takes a parent's output.
func readsParents(s *analysis.Step) bool {
	for _, e := range s.Parents {
		if e.Param >= 0 {
			return true
		}
	}
	return false
}

func (g *emitter) sleepAdapter(w *analysis.Workflow, s *analysis.Step) jen.Code {
	zero := jen.Qual(enginePath, "Wake").Values()
	body, args := g.callArgs(w, s, zero)
	wake := g.name("wake")
	field := "Delay"
	if s.SleepUntil {
		field = "At"
	}
	body = append(body,
		jen.List(jen.Id(wake), jen.Id(g.name("err"))).Op(":=").Add(g.callee(s.Func)).Call(args...),
		g.checkErr(zero),
		jen.Return(jen.Qual(enginePath, "Wake").Values(jen.Dict{jen.Id(field): jen.Id(wake)}), jen.Nil()),
	)
	return jen.Func().Params(g.ctxParam(), g.inParam()).Params(jen.Qual(enginePath, "Wake"), jen.Error()).Block(body...)
}

func (g *emitter) predicate(w *analysis.Workflow, s *analysis.Step, p *analysis.Predicate) jen.Code {
	var body, args []jen.Code
	var parents []int
	needInput := false
	for _, a := range p.Args {
		switch a.Source {
		case analysis.ArgContext:
			args = append(args, jen.Id(g.name("ctx")))
		case analysis.ArgInput:
			needInput = true
			args = append(args, jen.Id(g.name("input")))
		case analysis.ArgParent:
			parents = append(parents, a.Parent)
			args = append(args, jen.Id(g.parentVar(a.Parent)))
		}
	}
	if needInput {
		body = append(body, g.decodeInput(w, jen.False())...)
	}
	for _, i := range dedupe(parents) {
		// A mapped step's predicates see the each= parent's whole slice.
		body = append(body, g.decodeParent(s, i, s.Parents[i].Parent.ResultType(), jen.False())...)
	}
	call := g.callee(p.Func).Call(args...)
	if p.ReturnsErr {
		body = append(body, jen.Return(call))
	} else {
		body = append(body, jen.Return(call, jen.Nil()))
	}
	eval := jen.Func().Params(g.ctxParam(), g.inParam()).Params(jen.Bool(), jen.Error()).Block(body...)
	var fields fieldList
	fields.add("Name", jen.Lit(p.Func))
	fields.add("Eval", eval)
	return fields.values()
}

func dedupe(xs []int) []int {
	var out []int
	seen := map[int]bool{}
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// onFailure emits the onfailure adapter. It calls the handler even when
// the run's input does not decode (its type changed incompatibly since the
// run started): then with the zero input, and with the decode error in
// the failure's InputError, because a handler that never runs would leave
// the failed run unreported.
func (g *emitter) onFailure(w *analysis.Workflow) jen.Code {
	failure, input, err, zero := g.name("failure"), g.name("input"), g.name("err"), g.name("zero")
	body := []jen.Code{
		jen.List(jen.Id(input), jen.Id(err)).Op(":=").Qual(enginePath, "Input").Types(g.typ(w.Input)).Call(jen.Id(g.name("in"))),
		jen.If(jen.Id(err).Op("!=").Nil()).Block(
			// A failed decode may leave some fields set: start from zero.
			jen.Comment("The input no longer decodes: the handler still runs, once, with the"),
			jen.Comment("zero input and the reason in the failure."),
			jen.Var().Id(zero).Add(g.typ(w.Input)),
			jen.List(jen.Id(input), jen.Id(failure).Dot("InputError")).Op("=").List(jen.Id(zero), jen.Id(err).Dot("Error").Call()),
		),
		jen.Return(g.callee(w.OnFailure).Call(jen.Id(g.name("ctx")), jen.Id(input), jen.Id(failure))),
	}
	return jen.Func().Params(g.ctxParam(), g.inParam(), jen.Id(failure).Qual(dagPath, "Failure")).Error().Block(body...)
}

// key emits the func that reads key k from a run's encoded input, the
// field k names written as a string: Definition.Key for key=,
// Definition.ConcurrencyKey for per=, StepRateLimit.Key for per= of a
// step. The zero value is the empty key, for
// integers as for strings: to the engine an empty idempotency key is none,
// and an unset ID must not make every run a duplicate of the first.
func (g *emitter) key(w *analysis.Workflow, k *analysis.Key) jen.Code {
	input, err := g.name("input"), g.name("err")
	field := jen.Id(input)
	for _, name := range k.Fields() {
		field = field.Dot(name)
	}
	t := types.Unalias(k.Type)
	body := []jen.Code{
		jen.List(jen.Id(input), jen.Id(err)).Op(":=").Qual(enginePath, "Input").Types(g.typ(w.Input)).Call(
			jen.Qual(enginePath, "StepInput").Values(jen.Dict{jen.Id("Input"): jen.Id(g.name("in"))})),
		g.checkErr(jen.Lit("")),
	}
	switch k.Kind {
	case analysis.KeyString:
		if !types.Identical(t, types.Typ[types.String]) {
			field = jen.String().Call(field)
		}
		body = append(body, jen.Return(field, jen.Nil()))
	case analysis.KeySigned, analysis.KeyUnsigned:
		fn, conv := "FormatInt", types.Typ[types.Int64]
		if k.Kind == analysis.KeyUnsigned {
			fn, conv = "FormatUint", types.Typ[types.Uint64]
		}
		value := field.Clone()
		if !types.Identical(t, conv) {
			value = jen.Id(conv.Name()).Call(value)
		}
		body = append(body,
			jen.If(field.Clone().Op("==").Lit(0)).Block(jen.Return(jen.Lit(""), jen.Nil())),
			jen.Return(jen.Qual("strconv", fn).Call(value, jen.Lit(10)), jen.Nil()),
		)
	}
	return jen.Func().Params(jen.Id(g.name("in")).Index().Byte()).Params(jen.String(), jen.Error()).Block(body...)
}

// handle emits the typed workflow handle and the run type.
func (g *emitter) handle(w *analysis.Workflow) {
	n := analysis.GoName(w)
	wfType, runType, resType := n+"Workflow", n+"Run", n+"Result"
	e, recv, ctx, tenant, input, run, err := g.name("e"), g.name("w"), g.name("ctx"), g.name("tenant"), g.name("input"), g.name("run"), g.name("err")
	ctxP := jen.Id(ctx).Qual("context", "Context")

	g.f.Commentf("%s runs workflow %q on an engine with typed inputs and outputs.", wfType, w.Name)
	g.f.Type().Id(wfType).Struct(jen.Id("engine").Op("*").Qual(enginePath, "Engine"))
	g.f.Line()

	g.f.Commentf("%s registers workflow %q with %s and returns its typed handle.", analysis.NewFuncName(w), w.Name, e)
	g.f.Commentf("Registering the same workflow twice on one engine is an error.")
	g.f.Func().Id(analysis.NewFuncName(w)).Params(jen.Id(e).Op("*").Qual(enginePath, "Engine")).Params(jen.Op("*").Id(wfType), jen.Error()).Block(
		jen.If(jen.Id(err).Op(":=").Id(e).Dot("Register").Call(jen.Id(n+"Definition").Call()), jen.Id(err).Op("!=").Nil()).Block(
			jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit(fmt.Sprintf("register workflow %s: %%w", w.Name)), jen.Id(err))),
		),
		jen.Return(jen.Op("&").Id(wfType).Values(jen.Dict{jen.Id("engine"): jen.Id(e)}), jen.Nil()),
	)
	g.f.Line()

	opts := g.name("opts")
	optsP := jen.Id(opts).Op("...").Qual(enginePath, "TriggerOption")
	g.comment(fmt.Sprintf("Run starts a run of %q for %s, as Start does with %s, and waits until it finishes: for a duplicate, until the run found by its key finishes.", w.Name, tenant, opts))
	g.f.Func().Params(jen.Id(recv).Op("*").Id(wfType)).Id("Run").Params(ctxP, jen.Id(tenant).String(), jen.Id(input).Add(g.typ(w.Input)), optsP).Params(jen.Id(resType), jen.Error()).Block(
		jen.List(jen.Id(run), jen.Id(err)).Op(":=").Id(recv).Dot("Start").Call(jen.Id(ctx), jen.Id(tenant), jen.Id(input), jen.Id(opts).Op("...")),
		jen.If(jen.Id(err).Op("!=").Nil()).Block(jen.Return(jen.Id(resType).Values(), jen.Id(err))),
		jen.Return(jen.Id(run).Dot("Wait").Call(jen.Id(ctx))),
	)
	g.f.Line()

	id, trig := g.name("id"), g.name("triggered")
	var started, got fieldList
	started.add("engine", jen.Id(recv).Dot("engine"))
	started.add("id", jen.Id(trig).Dot("ID"))
	started.add("duplicate", jen.Id(trig).Dot("Duplicate"))
	got.add("engine", jen.Id(recv).Dot("engine"))
	got.add("id", jen.Id(id))
	g.comment(startDoc(w, tenant, opts))
	g.f.Func().Params(jen.Id(recv).Op("*").Id(wfType)).Id("Start").Params(ctxP, jen.Id(tenant).String(), jen.Id(input).Add(g.typ(w.Input)), optsP).Params(jen.Op("*").Id(runType), jen.Error()).Block(
		jen.List(jen.Id(trig), jen.Id(err)).Op(":=").Id(recv).Dot("engine").Dot("TriggerRun").Call(jen.Id(ctx), jen.Lit(w.Name), jen.Id(tenant), jen.Id(input), jen.Id(opts).Op("...")),
		jen.If(jen.Id(err).Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Id(err))),
		jen.Return(jen.Op("&").Id(runType).Add(started.values()), jen.Nil()),
	)
	g.f.Line()

	tx := g.name("tx")
	txP := jen.Id(tx).Qual(pgxPath, "Tx")
	g.comment(startTxDoc(w, tx))
	g.f.Func().Params(jen.Id(recv).Op("*").Id(wfType)).Id("StartTx").Params(ctxP, txP, jen.Id(tenant).String(), jen.Id(input).Add(g.typ(w.Input)), optsP).Params(jen.Op("*").Id(runType), jen.Error()).Block(
		jen.List(jen.Id(trig), jen.Id(err)).Op(":=").Id(recv).Dot("engine").Dot("TriggerRunTx").Call(jen.Id(ctx), jen.Id(tx), jen.Lit(w.Name), jen.Id(tenant), jen.Id(input), jen.Id(opts).Op("...")),
		jen.If(jen.Id(err).Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Id(err))),
		jen.Return(jen.Op("&").Id(runType).Add(started.values()), jen.Nil()),
	)
	g.f.Line()

	g.f.Commentf("Get returns the typed handle of the run of %q with %s, like the one Start", w.Name, id)
	g.f.Comment("returns, so a run whose id was kept can be waited on. Get does not check that")
	g.f.Comment("the run exists: Wait reports an unknown id with an error that wraps")
	g.f.Comment("store.ErrRunNotFound. The handle's Duplicate reports false.")
	g.f.Func().Params(jen.Id(recv).Op("*").Id(wfType)).Id("Get").Params(jen.Id(id).Qual(dagPath, "RunID")).Op("*").Id(runType).Block(
		jen.Return(jen.Op("&").Id(runType).Add(got.values())),
	)
	g.f.Line()

	spec := g.name("spec")
	g.comment(fmt.Sprintf("CreateSchedule creates a schedule of %q that starts a run with %s at each slot of %s.Cron, for %s.Tenant, or replaces the schedule of that tenant with %s.Name; it sets %s.Input to %s. See engine.Engine.CreateSchedule.",
		w.Name, input, spec, spec, spec, spec, input))
	g.f.Func().Params(jen.Id(recv).Op("*").Id(wfType)).Id("CreateSchedule").Params(ctxP, jen.Id(spec).Qual(enginePath, "ScheduleSpec"), jen.Id(input).Add(g.typ(w.Input))).Error().Block(
		jen.Id(spec).Dot("Input").Op("=").Id(input),
		jen.Return(jen.Id(recv).Dot("engine").Dot("CreateSchedule").Call(jen.Id(ctx), jen.Lit(w.Name), jen.Id(spec))),
	)
	g.f.Line()

	payload := g.name("payload")
	for _, s := range w.Steps {
		if s.Kind != analysis.KindSignal {
			continue
		}
		g.comment(sendDoc(w, s, id, payload))
		g.f.Func().Params(jen.Id(recv).Op("*").Id(wfType)).Id(analysis.SendMethod(s)).Params(ctxP, jen.Id(id).Qual(dagPath, "RunID"), jen.Id(payload).Add(g.typ(s.Output))).Error().Block(
			jen.Return(jen.Id(recv).Dot("engine").Dot("Signal").Call(jen.Id(ctx), jen.Lit(w.Name), jen.Id(id), jen.Lit(s.Name), jen.Id(payload))),
		)
		g.f.Line()
		g.comment(fmt.Sprintf("%s is %s in %s, a transaction the caller began on the store's database: the signal is delivered, or held, if and only if %s commits. Until it ends, %s holds the run's row lock, which the completions of the run's steps wait for: keep it short. See engine.Engine.SignalTx.",
			analysis.SendTxMethod(s), analysis.SendMethod(s), tx, tx, tx))
		g.f.Func().Params(jen.Id(recv).Op("*").Id(wfType)).Id(analysis.SendTxMethod(s)).Params(ctxP, txP, jen.Id(id).Qual(dagPath, "RunID"), jen.Id(payload).Add(g.typ(s.Output))).Error().Block(
			jen.Return(jen.Id(recv).Dot("engine").Dot("SignalTx").Call(jen.Id(ctx), jen.Id(tx), jen.Lit(w.Name), jen.Id(id), jen.Lit(s.Name), jen.Id(payload))),
		)
		g.f.Line()
	}

	r, res, out := g.name("r"), g.name("res"), g.name("out")
	g.f.Commentf("%s is one run of workflow %q.", runType, w.Name)
	g.f.Type().Id(runType).Struct(
		jen.Id("engine").Op("*").Qual(enginePath, "Engine"),
		jen.Id("id").Qual(dagPath, "RunID"),
		jen.Id("duplicate").Bool(),
	)
	g.f.Line()
	g.f.Comment("ID returns the run's id.")
	g.f.Func().Params(jen.Id(r).Op("*").Id(runType)).Id("ID").Params().Qual(dagPath, "RunID").Block(jen.Return(jen.Id(r).Dot("id")))
	g.f.Line()
	g.f.Comment("Duplicate reports whether Start found this run by its idempotency key (an")
	g.f.Comment("earlier trigger started it) rather than starting it.")
	g.f.Func().Params(jen.Id(r).Op("*").Id(runType)).Id("Duplicate").Params().Bool().Block(jen.Return(jen.Id(r).Dot("duplicate")))
	g.f.Line()

	wait := jen.Id(r).Dot("engine").Dot("Wait").Call(jen.Id(ctx), jen.Id(r).Dot("id"))
	var body []jen.Code
	if !hasOutputs(w) {
		// Nothing to decode: the engine's result is not needed, and a
		// variable holding it would not compile.
		body = []jen.Code{
			jen.If(jen.List(jen.Id("_"), jen.Id(err)).Op(":=").Add(wait), jen.Id(err).Op("!=").Nil()).Block(jen.Return(jen.Id(resType).Values(), jen.Id(err))),
			jen.Return(jen.Id(resType).Values(), jen.Nil()),
		}
	} else {
		body = []jen.Code{
			jen.List(jen.Id(res), jen.Id(err)).Op(":=").Add(wait),
			jen.If(jen.Id(err).Op("!=").Nil()).Block(jen.Return(jen.Id(resType).Values(), jen.Id(err))),
			jen.Var().Id(out).Id(resType),
		}
	}
	for _, s := range w.Steps {
		if s.Output == nil {
			continue
		}
		fn := "Output"
		if s.Skippable {
			fn = "OutputMaybe"
		}
		body = append(body, jen.If(
			jen.List(jen.Id(out).Dot(analysis.ResultField(s)), jen.Id(err)).Op("=").Qual(enginePath, fn).Types(g.typ(s.ResultType())).Call(jen.Id(res), jen.Lit(s.Name)),
			jen.Id(err).Op("!=").Nil(),
		).Block(jen.Return(jen.Id(resType).Values(), jen.Id(err))))
	}
	if hasOutputs(w) {
		body = append(body, jen.Return(jen.Id(out), jen.Nil()))
	}
	g.f.Comment("Wait blocks until the run finishes and returns the outputs of its steps.")
	g.f.Comment("When the run failed or was cancelled, the error is the engine's *engine.RunError.")
	g.f.Func().Params(jen.Id(r).Op("*").Id(runType)).Id("Wait").Params(ctxP).Params(jen.Id(resType), jen.Error()).Block(body...)
}

// sendDoc is the doc comment of the Send method of signal wait s,
// unwrapped.
func sendDoc(w *analysis.Workflow, s *analysis.Step, id, payload string) string {
	doc := fmt.Sprintf("%s sends %s to signal wait %q of the run of %q with %s.", analysis.SendMethod(s), payload, s.Name, w.Name, id)
	doc += " A run waiting there goes on at once, with the payload as the wait's output; a signal sent before the run reaches the wait is held and used when it does."
	if s.SignalTimeout > 0 {
		doc += fmt.Sprintf(" A wait that gets no signal within %s after it begins is skipped.", durationText(s.SignalTimeout))
	}
	doc += " A second signal for the wait, held or delivered, is an error wrapping store.ErrSignalHeld or store.ErrSignalResolved, as is a finished run (store.ErrRunFinished) and an unknown one (store.ErrRunNotFound); see engine.Engine.Signal."
	return doc
}

// startTxDoc is the doc comment of StartTx, unwrapped.
func startTxDoc(w *analysis.Workflow, tx string) string {
	doc := fmt.Sprintf("StartTx is Start in %s, a transaction the caller began on the store's database and commits or rolls back: the run, its tasks and its key", tx)
	if w.Concurrency > 0 {
		doc += ", its admission by the cap"
	}
	doc += fmt.Sprintf(" exist if and only if %s commits, and its first steps start after the commit, not before. Until it ends, %s holds the locks the trigger takes: the tenant's row of the fair queue", tx, tx)
	if w.Concurrency > 0 {
		doc += ", the cap's slot"
	}
	doc += fmt.Sprintf(", the key's row when the run has a key: keep it short. An error leaves %s usable, without the run. See engine.Engine.TriggerTx.", tx)
	return doc
}

// startDoc is the doc comment of Start, unwrapped.
func startDoc(w *analysis.Workflow, tenant, opts string) string {
	doc := fmt.Sprintf("Start starts a run of %q for %s and returns at once.", w.Name, tenant)
	if w.Key == nil {
		doc += fmt.Sprintf(" With engine.WithKey(k) in %s, a run of the same tenant with key k that is still retained is returned instead of a new one; Duplicate tells.", opts)
	} else {
		doc += fmt.Sprintf(" A run of the same tenant with the same key (%s) that is still retained is returned instead of a new one; Duplicate tells. A zero %s is no key; engine.WithKey(k) in %s sets the key in its place.",
			w.Key.Path, w.Key.Path, opts)
	}
	if w.Concurrency > 0 {
		runs, run := fmt.Sprintf("%d runs", w.Concurrency), "run"
		if w.Concurrency == 1 {
			runs, run = "one run", "runs"
		}
		of := fmt.Sprintf("of %q", w.Name)
		if w.ConcurrencyKey != nil {
			of = "per " + w.ConcurrencyKey.Path
		}
		doc += fmt.Sprintf(" At most %s %s, of all tenants together, %s at once; a run over the cap waits QUEUED, and waiting runs are admitted in trigger order.", runs, of, run)
	}
	if w.Timeout > 0 {
		doc += fmt.Sprintf(" A run that has not finished %s after its trigger fails, timed out; engine.WithTimeout(d) in %s sets another deadline.", durationText(w.Timeout), opts)
	}
	return doc
}

// durationText writes d as time.Duration's String does, without zero
// units at the end: 1h30m rather than 1h30m0s.
func durationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// comment writes text as a comment, wrapped to lines of 80 columns.
func (g *emitter) comment(text string) {
	for _, line := range wrap(text, 80-len("// ")) {
		g.f.Comment(line)
	}
}

// wrap breaks text into lines of at most width bytes, between words.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case len(line)+1+len(word) > width:
			lines = append(lines, line)
			line = word
		default:
			line += " " + word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// hasOutputs reports whether a step of w returns a value.
func hasOutputs(w *analysis.Workflow) bool {
	for _, s := range w.Steps {
		if s.Output != nil {
			return true
		}
	}
	return false
}

// result emits the typed result struct.
func (g *emitter) result(w *analysis.Workflow) {
	n := analysis.GoName(w)
	g.f.Commentf("%sResult holds the outputs of a finished run of workflow %q: one field", n, w.Name)
	signals := slices.ContainsFunc(w.Steps, func(s *analysis.Step) bool { return s.Kind == analysis.KindSignal })
	switch {
	case signals:
		g.comment("per step that returns a value and per signal wait (its payload), a dag.Maybe when the step or the wait can be skipped (a wait with timeout= is skipped when no signal came in time).")
		if slices.ContainsFunc(w.Steps, (*analysis.Step).Mapped) {
			g.f.Comment("A mapped step's field is the slice of its elements' outputs, in element order.")
		}
	case slices.ContainsFunc(w.Steps, (*analysis.Step).Mapped):
		g.f.Comment("per step that returns a value, a dag.Maybe when the step can be skipped;")
		g.f.Comment("a mapped step's field is the slice of its elements' outputs, in element order.")
	default:
		g.f.Comment("per step that returns a value, a dag.Maybe when the step can be skipped.")
	}
	if slices.ContainsFunc(w.Steps, func(s *analysis.Step) bool { return s.Kind == analysis.KindChild && s.Output != nil }) {
		g.f.Comment("A child step's field is the result of the run it started (its workflow's result= step).")
	}
	g.f.Type().Id(n + "Result").StructFunc(func(grp *jen.Group) {
		for _, s := range w.Steps {
			if s.Output == nil {
				continue
			}
			t := g.typ(s.ResultType())
			if s.Skippable {
				t = jen.Qual(dagPath, "Maybe").Types(t)
			}
			grp.Id(analysis.ResultField(s)).Add(t)
		}
	})
}

// userFunc is a func of the user's that the generated code calls.
type userFunc struct {
	name string
	sig  *types.Signature
}

// userFuncs returns the funcs workflow w calls, each once: steps in source
// order, then skip predicates, then the onfailure func, then the schedule
// funcs. Signal waits call none.
func userFuncs(w *analysis.Workflow) []userFunc {
	var out []userFunc
	seen := map[string]bool{}
	add := func(name string, sig *types.Signature) {
		if !seen[name] {
			seen[name] = true
			out = append(out, userFunc{name, sig})
		}
	}
	for _, s := range w.Steps {
		if s.Kind != analysis.KindSignal {
			add(s.Func, s.Sig)
		}
	}
	for _, s := range w.Steps {
		for _, p := range s.Skip {
			add(p.Func, p.Sig)
		}
	}
	if w.OnFailure != "" {
		add(w.OnFailure, w.OnFailureSig)
	}
	for _, sc := range w.Schedules {
		add(sc.Func, sc.Sig)
	}
	return out
}

// signatureTypes declares the signature type of every func of w that an
// earlier workflow of the package has not declared, and reports whether
// it declared any.
func (g *emitter) signatureTypes(w *analysis.Workflow) bool {
	var specs []jen.Code
	for _, fn := range userFuncs(w) {
		if g.declared[fn.name] {
			continue
		}
		g.declared[fn.name] = true
		specs = append(specs, jen.Id(signatureType(fn.name)).Add(g.funcType(fn.sig)))
	}
	if len(specs) == 0 {
		return false
	}
	n := analysis.GoName(w)
	g.f.Commentf("The signatures of the funcs of workflow %q as generated. %sDefinition", w.Name, n)
	g.f.Comment("assigns each func to a variable of its type, so a func changed since then")
	g.f.Comment("fails the build there, with an error that names the type: run go generate.")
	g.f.Type().Defs(specs...)
	return true
}

// fnVar is the local variable through which a definition calls the user
// func fn.
func (g *emitter) fnVar(fn string) string { return g.name(fn + "Fn") }

// callee is the expression through which the generated code calls the
// user func fn: the field of the funcs struct that the definition filled
// from the guards.
func (g *emitter) callee(fn string) *jen.Statement { return jen.Id(g.name("fns")).Dot(g.fnVar(fn)) }

// guards returns the statements that open a definition (or a chunk of
// a large one's): one variable per user func of ufs, declared with the
// func's signature type and assigned the func. They are the compile-time guards. A func whose signature changed
// after generation, or that is gone, fails the build on its guard line,
// and on no other: the adapters call the variable, whose type is still
// the one they were generated for. The guards are locals rather than
// package-level variables so that a step calling back into its own
// workflow (NewOrderWorkflow in a step) is no initialization cycle.
func (g *emitter) guards(ufs []userFunc) []jen.Code {
	var specs []jen.Code
	for _, fn := range ufs {
		specs = append(specs, jen.Id(g.fnVar(fn.name)).Id(signatureType(fn.name)).Op("=").Id(fn.name))
	}
	return []jen.Code{
		jen.Comment("Compile-time guards: each func with the signature it was generated for."),
		jen.Comment("If one of these lines does not compile, the func changed: run go generate."),
		jen.Var().Defs(specs...),
	}
}

// duration renders d as a readable constant expression: 1500 * time.Millisecond.
func duration(d time.Duration) jen.Code {
	units := []struct {
		d    time.Duration
		name string
	}{
		{time.Hour, "Hour"}, {time.Minute, "Minute"}, {time.Second, "Second"},
		{time.Millisecond, "Millisecond"}, {time.Microsecond, "Microsecond"},
	}
	for _, u := range units {
		if d%u.d == 0 {
			if d == u.d {
				return jen.Qual("time", u.name)
			}
			return jen.Lit(int(d/u.d)).Op("*").Qual("time", u.name)
		}
	}
	return jen.Qual("time", "Duration").Call(jen.Lit(int64(d)))
}
