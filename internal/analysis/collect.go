package analysis

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// collect reads every directive in the package, checks its syntax and
// placement, and returns one found per declaration that carries a known
// directive, in source order.
func (a *analyzer) collect() []*found {
	files := slices.Clone(a.pkg.Syntax)
	slices.SortFunc(files, func(x, y *ast.File) int {
		return strings.Compare(a.fset.File(x.Pos()).Name(), a.fset.File(y.Pos()).Name())
	})
	var out []*found
	for _, file := range files {
		if filepath.Base(a.fset.File(file.Pos()).Name()) == GeneratedFile {
			continue
		}
		out = append(out, a.collectFile(file)...)
	}
	return out
}

func (a *analyzer) collectFile(file *ast.File) []*found {
	funcDocs := map[*ast.CommentGroup]*ast.FuncDecl{}
	typeDocs := map[*ast.CommentGroup]*ast.TypeSpec{}
	constDocs := map[*ast.CommentGroup]*ast.ValueSpec{}
	otherDocs := map[*ast.CommentGroup]string{}
	for _, d := range file.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Doc != nil {
				funcDocs[d.Doc] = d
			}
		case *ast.GenDecl:
			if d.Tok == token.TYPE {
				if d.Doc != nil && len(d.Specs) == 1 {
					typeDocs[d.Doc] = d.Specs[0].(*ast.TypeSpec)
				} else if d.Doc != nil {
					otherDocs[d.Doc] = "on a group of types"
				}
				for _, s := range d.Specs {
					if ts := s.(*ast.TypeSpec); ts.Doc != nil {
						typeDocs[ts.Doc] = ts
					}
				}
			} else if d.Tok == token.CONST {
				if d.Doc != nil && len(d.Specs) == 1 {
					constDocs[d.Doc] = d.Specs[0].(*ast.ValueSpec)
				} else if d.Doc != nil {
					otherDocs[d.Doc] = "on a group of constants"
				}
				for _, s := range d.Specs {
					if vs := s.(*ast.ValueSpec); vs.Doc != nil {
						constDocs[vs.Doc] = vs
					}
				}
			} else if d.Doc != nil {
				otherDocs[d.Doc] = "on a " + d.Tok.String() + " declaration"
			}
		}
	}
	var out []*found
	byDecl := map[ast.Node]*found{}
	for _, group := range file.Comments {
		for _, c := range group.List {
			if !strings.HasPrefix(c.Text, directivePrefix) {
				if name, ok := nearMiss(c.Text); ok {
					msg := "this comment is not a directive because of the space: write //dag:" + name
					if strings.HasPrefix(c.Text, "/*") {
						msg = "a /* */ comment is not a directive: write //dag:" + name + " as a line comment"
					}
					a.report(c.Slash, c.End(), SpacedDirective, Warning, msg)
				}
				continue
			}
			d, errs := parseDirective(c)
			for _, e := range errs {
				a.errorf(e.Pos, e.End, e.Code, "%s", e.Msg)
			}
			keys, known := directiveKeys(d.Name)
			if !known {
				if d.Name == "" {
					a.errorf(d.Pos, d.NameEnd, UnknownDirective, "missing directive name after //dag: (one of %s)", strings.Join(directiveNames(), ", "))
				} else {
					a.errorf(d.Pos, d.NameEnd, UnknownDirective, "unknown directive //dag:%s%s", d.Name, didYouMean(d.Name, directiveNames()))
				}
				continue
			}
			f := &found{dir: d}
			f.args, f.dupKeys = a.checkKeys(d, keys)
			switch {
			case funcDocs[group] != nil:
				f.fn = funcDocs[group]
			case typeDocs[group] != nil:
				f.spec = typeDocs[group]
			case constDocs[group] != nil:
				f.val = constDocs[group]
			}
			on := otherDocs[group]
			if on == "" && f.fn == nil && f.spec == nil && f.val == nil {
				on = a.unattached(file, group)
			}
			if !a.checkPlacement(f, on) {
				continue
			}
			var node ast.Node = f.spec
			switch {
			case f.fn != nil:
				node = f.fn
			case f.val != nil:
				node = f.val
			}
			if first := byDecl[node]; first != nil {
				a.report(d.Pos, d.NameEnd, DuplicateDirective, Error,
					fmt.Sprintf("second dagen directive on %s: a declaration takes one of //dag:%s", declName(f), strings.Join(directiveNames(), ", //dag:")),
					Related{Pos: a.position(first.dir.Pos), Message: "first directive: //dag:" + first.dir.Name})
				continue
			}
			byDecl[node] = f
			out = append(out, f)
		}
	}
	return out
}

// unattached says where a directive that is no declaration's doc comment
// sits, to complete "but it is …".
func (a *analyzer) unattached(file *ast.File, group *ast.CommentGroup) string {
	line := func(p token.Pos) int { return a.fset.Position(p).Line }
	var next ast.Decl
	for _, d := range file.Decls {
		switch {
		case d.Pos() <= group.Pos() && group.End() <= d.End():
			if fn, ok := d.(*ast.FuncDecl); ok {
				return "inside func " + fn.Name.Name + ": directives apply only to top-level declarations"
			}
			return "inside a declaration: directives apply only to top-level declarations"
		case d.End() <= group.Pos() && line(d.End()) == line(group.Pos()):
			return "at the end of a line of code: put it on its own line directly above the declaration"
		case d.Pos() >= group.End() && next == nil:
			next = d
		}
	}
	if next != nil && line(next.Pos()) > line(group.End())+1 {
		return "separated from the declaration below by a blank line: remove the blank line"
	}
	return "not above any declaration"
}

func declName(f *found) string {
	switch {
	case f.fn != nil:
		return "func " + f.fn.Name.Name
	case f.val != nil:
		return "const " + f.val.Names[0].Name
	}
	return "type " + f.spec.Name.Name
}

// checkKeys reports unknown, repeated and empty keys and returns the
// arguments that are fine, by key.
//
// A key given more than once is reported once; the result keeps its first
// value, and dups holds the key so that checks which would only point the
// wrong way (a parameter "with no parent" whose parent is in the second
// after=) can stand down.
func (a *analyzer) checkKeys(d *directive, keys []string) (args map[string]arg, dups map[string]bool) {
	args = map[string]arg{}
	dups = map[string]bool{}
	for _, ar := range d.Args {
		if msg, ok := misplacedMapKey(d.Name, ar.Key); ok {
			a.errorf(ar.KeyPos, ar.ValuePos-1, MisplacedEach, "%s", msg)
			continue
		}
		if msg, ok := misplacedRateKey(d.Name, ar.Key); ok {
			a.errorf(ar.KeyPos, ar.ValuePos-1, MisplacedRateLimit, "%s", msg)
			continue
		}
		if !slices.Contains(keys, ar.Key) {
			msg := fmt.Sprintf("unknown key %s in //dag:%s", ar.Key, d.Name)
			if len(keys) == 0 {
				msg = fmt.Sprintf("//dag:%s takes no arguments", d.Name)
			} else if s := suggest(ar.Key, keys); s != "" {
				msg += ": did you mean " + s + "?"
			} else {
				msg += " (it accepts " + strings.Join(keys, ", ") + ")"
			}
			a.errorf(ar.KeyPos, ar.ValuePos-1, UnknownKey, "%s", msg)
			continue
		}
		if _, dup := args[ar.Key]; dup {
			if !dups[ar.Key] {
				a.duplicateKey(d, ar.Key)
			}
			dups[ar.Key] = true
			continue
		}
		if ar.Value == "" {
			a.errorf(ar.KeyPos, ar.End, EmptyValue, "key %s has an empty value", ar.Key)
			continue
		}
		args[ar.Key] = ar
	}
	return args, dups
}

// duplicateKey reports every use of key in d in one diagnostic, at the
// second, with the others as related positions.
func (a *analyzer) duplicateKey(d *directive, key string) {
	var uses []arg
	for _, ar := range d.Args {
		if ar.Key == key {
			uses = append(uses, ar)
		}
	}
	values := make([]string, len(uses))
	for i, u := range uses {
		values[i] = u.Value
	}
	msg := fmt.Sprintf("key %s given %s in //dag:%s: give it once", key, times(len(uses)), d.Name)
	if isListKey(key) {
		msg = fmt.Sprintf("key %s given %s in //dag:%s: give one list, as in %s=%s", key, times(len(uses)), d.Name, key, strings.Join(values, ","))
	}
	var related []Related
	for i, u := range uses {
		if i == 1 {
			continue
		}
		what := "first"
		if i > 0 {
			what = "also"
		}
		related = append(related, Related{Pos: a.position(u.KeyPos), Message: what + " " + key + "=" + u.Value})
	}
	a.report(uses[1].KeyPos, uses[1].End, DuplicateKey, Error, msg, related...)
}

func times(n int) string {
	if n == 2 {
		return "twice"
	}
	return strconv.Itoa(n) + " times"
}

// checkPlacement reports a directive that is not on a declaration it can
// describe. other says where it is when that is not a func or a type ("on a
// var declaration", "inside func body"), if known.
func (a *analyzer) checkPlacement(f *found, other string) bool {
	d := f.dir
	if d.Name == dirRateLimit && f.val != nil {
		return true // addRateLimit checks that it is one string constant
	}
	wantType := d.Name == dirWorkflow || d.Name == dirSignal
	what := "a workflow input"
	if d.Name == dirSignal {
		what = "a signal payload"
	}
	switch {
	case wantType && f.spec != nil:
		if f.spec.TypeParams != nil {
			a.errorf(d.Pos, d.NameEnd, GenericDecl, "//dag:%s on generic type %s: %s must be a plain type", d.Name, f.spec.Name.Name, what)
			return false
		}
		if f.spec.Name.Name == "_" {
			a.errorf(d.Pos, d.NameEnd, BadName, "//dag:%s on a blank type: generated code cannot refer to _; give the type a name", d.Name)
			return false
		}
		if f.spec.Assign.IsValid() && d.Name == dirWorkflow {
			a.aliasWorkflow(f.spec)
			return false
		}
		return true
	case !wantType && d.Name != dirRateLimit && f.fn != nil:
		if f.fn.Recv != nil {
			a.errorf(d.Pos, d.NameEnd, MethodStep, "//dag:%s on method %s: use a top-level func", d.Name, f.fn.Name.Name)
			return false
		}
		if f.fn.Type.TypeParams != nil {
			funcs := "steps"
			if d.Name == dirSchedule {
				funcs = "schedule funcs"
			}
			a.errorf(d.Pos, d.NameEnd, GenericDecl, "//dag:%s on generic func %s: %s cannot have type parameters", d.Name, f.fn.Name.Name, funcs)
			return false
		}
		if f.fn.Name.Name == "_" {
			a.errorf(d.Pos, d.NameEnd, BadName, "//dag:%s on a blank func: generated code cannot call _; give the func a name", d.Name)
			return false
		}
		return true
	}
	want := "a top-level func"
	switch d.Name {
	case dirRateLimit:
		want = "a top-level string constant (the rate limit's name)"
	case dirWorkflow:
		want = "a top-level type (the workflow's input)"
	case dirSignal:
		want = "a top-level type (the payload a run waits for)"
	}
	on := "not above any declaration"
	switch {
	case f.fn != nil && f.fn.Recv != nil:
		on = "on method " + f.fn.Name.Name
	case f.fn != nil:
		on = "on func " + f.fn.Name.Name
	case f.spec != nil:
		on = "on type " + f.spec.Name.Name
	case f.val != nil:
		on = "on const " + f.val.Names[0].Name
	case other != "":
		on = other
	}
	a.errorf(d.Pos, d.NameEnd, MisplacedDirective, "//dag:%s must be directly above %s, but it is %s", d.Name, want, on)
	return false
}

// aliasWorkflow reports //dag:workflow on a type alias. An alias is no
// type of its own: steps taking the aliased type would silently belong to
// it, and the workflow's name would be the alias's while every message and
// signature spoke of the other type. Steps taking the aliased type are
// then not blamed again for it (aliasTargets).
func (a *analyzer) aliasWorkflow(spec *ast.TypeSpec) {
	name := spec.Name.Name
	obj, _ := a.pkg.TypesInfo.Defs[spec.Name].(*types.TypeName)
	if obj == nil {
		return
	}
	target := types.Unalias(obj.Type())
	a.aliasTargets = append(a.aliasTargets, target)
	what := a.typeString(target)
	fix := fmt.Sprintf("make %s a defined type: type %s %s", name, name, what)
	if n, ok := target.(*types.Named); ok && n.Obj().Pkg() == a.pkg.Types && n.TypeArgs().Len() == 0 {
		fix = fmt.Sprintf("put the directive on type %s, or make %s a defined type: type %s %s", what, name, name, what)
	}
	a.errorf(spec.Name.Pos(), spec.Type.End(), AliasWorkflow, "//dag:workflow on type alias %s, an alias of %s: a workflow input must be a type of its own; %s", name, what, fix)
}
