package analysis

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/packages"
)

// Child workflows of other packages. A child step may run a workflow of a
// package that is not among those being generated: dagen then reads that
// package's directives from its source, without checking or generating it,
// for the workflow's stored name and its result= step. Types come from the
// package as the step's own package imports it, so that they are the very
// types the step's children take.

// foreignPkg is what the directives of another package say.
type foreignPkg struct {
	workflows map[string]*foreignDecl // by input type name
	funcs     map[string]*foreignDecl // //dag:step, //dag:child and //dag:sleep funcs, by func name
	signals   []*foreignDecl          // //dag:signal types
	err       string                  // why the package could not be read
}

// foreignDecl is one directive of another package and the name of the
// declaration it is on.
type foreignDecl struct {
	dir  string
	decl string
	args map[string]string
}

// storedName is name= or the declaration's name.
func (d *foreignDecl) storedName() string {
	if n := d.args["name"]; n != "" {
		return n
	}
	return d.decl
}

// foreignWF is a workflow of another package, as a child step sees it.
type foreignWF struct {
	name      string     // stored name
	result    string     // stored name of the result step, or ""
	output    types.Type // the result as the child step's children read it, or nil
	skippable bool       // the result step may end SKIPPED
}

// readForeign returns the directives of the package at path, read once
// per program.
func (a *analyzer) readForeign(path string) *foreignPkg {
	if a.prog == nil {
		a.prog = &Program{Fset: a.fset}
	}
	if a.prog.foreign == nil {
		a.prog.foreign = map[string]*foreignPkg{}
	}
	if fp := a.prog.foreign[path]; fp != nil {
		return fp
	}
	fp := &foreignPkg{workflows: map[string]*foreignDecl{}, funcs: map[string]*foreignDecl{}}
	a.prog.foreign[path] = fp
	var files []*ast.File
	for _, p := range a.prog.Packages {
		if p.PkgPath == path {
			files = p.Syntax
		}
	}
	if files == nil {
		cfg := a.prog.cfg
		pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedFiles, Dir: cfg.Dir, Env: cfg.Env, BuildFlags: cfg.BuildFlags}, path)
		if err == nil && (len(pkgs) != 1 || len(pkgs[0].Errors) > 0) {
			err = fmt.Errorf("go list found no package %s", path)
			if len(pkgs) == 1 && len(pkgs[0].Errors) > 0 {
				err = pkgs[0].Errors[0]
			}
		}
		if err != nil {
			fp.err = err.Error()
			return fp
		}
		fset := token.NewFileSet()
		for _, name := range pkgs[0].GoFiles {
			if isGenerated(name) {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				fp.err = err.Error()
				return fp
			}
			files = append(files, f)
		}
	}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if dd := foreignDirective(d.Doc, d.Name.Name); dd != nil && d.Recv == nil &&
					(dd.dir == dirStep || dd.dir == dirChild || dd.dir == dirSleep) {
					fp.funcs[dd.decl] = dd
				}
			case *ast.GenDecl:
				if d.Tok != token.TYPE {
					continue
				}
				for _, sp := range d.Specs {
					ts := sp.(*ast.TypeSpec)
					doc := ts.Doc
					if doc == nil && len(d.Specs) == 1 {
						doc = d.Doc
					}
					switch dd := foreignDirective(doc, ts.Name.Name); {
					case dd == nil:
					case dd.dir == dirWorkflow:
						fp.workflows[dd.decl] = dd
					case dd.dir == dirSignal:
						fp.signals = append(fp.signals, dd)
					}
				}
			}
		}
	}
	return fp
}

// foreignDirective returns the first directive of a doc comment, or nil.
func foreignDirective(doc *ast.CommentGroup, decl string) *foreignDecl {
	if doc == nil {
		return nil
	}
	for _, c := range doc.List {
		if !strings.HasPrefix(c.Text, directivePrefix) {
			continue
		}
		d, _ := parseDirective(c)
		out := &foreignDecl{dir: d.Name, decl: decl, args: map[string]string{}}
		for _, ar := range d.Args {
			if _, dup := out.args[ar.Key]; !dup {
				out.args[ar.Key] = ar.Value
			}
		}
		return out
	}
	return nil
}

// foreignWorkflow returns the workflow of another package whose input is
// named, or nil and why it cannot be run; nil and "" when named is no
// workflow input at all.
func (a *analyzer) foreignWorkflow(named *types.Named) (*foreignWF, string) {
	return a.foreignWorkflowDepth(named, 0)
}

func (a *analyzer) foreignWorkflowDepth(named *types.Named, depth int) (*foreignWF, string) {
	pkg := named.Obj().Pkg()
	fp := a.readForeign(pkg.Path())
	if fp.err != "" {
		return nil, "dagen cannot read that package: " + fp.err
	}
	wd := fp.workflows[named.Obj().Name()]
	if wd == nil {
		return nil, ""
	}
	fw := &foreignWF{name: wd.storedName()}
	result := wd.args["result"]
	if result == "" {
		return fw, ""
	}
	fix := fmt.Sprintf("run go generate in %s to see why", filepath.Base(pkg.Path()))
	if fd := fp.funcs[result]; fd != nil {
		fn, _ := pkg.Scope().Lookup(result).(*types.Func)
		if fn == nil {
			return nil, fmt.Sprintf("its result step %s is not exported, so its output type cannot be read from here: export it, keeping its stored name with name=%s", result, fd.storedName())
		}
		sig := fn.Type().(*types.Signature)
		res := sig.Results()
		if fd.dir == dirSleep || res.Len() != 2 || !isError(res.At(1).Type()) {
			return nil, fmt.Sprintf("its result=%s names no step that gives a value: %s", result, fix)
		}
		fw.result = fd.storedName()
		fw.skippable = fp.skippable(pkg, fd, map[*foreignDecl]bool{})
		fw.output = res.At(0).Type()
		if fd.dir == dirChild {
			cn, _ := types.Unalias(res.At(0).Type()).(*types.Named)
			if cn == nil || depth > 32 {
				return nil, fmt.Sprintf("its result=%s names a child step dagen cannot follow: %s", result, fix)
			}
			cw, why := a.foreignWorkflowDepth(cn, depth+1)
			if cw == nil || cw.output == nil {
				if why == "" {
					why = fmt.Sprintf("its result=%s names a child step that gives no value: %s", result, fix)
				}
				return nil, why
			}
			fw.output, fw.skippable = cw.output, fw.skippable || cw.skippable
		}
		if fd.args["each"] != "" {
			fw.output = types.NewSlice(fw.output)
		}
		return fw, ""
	}
	for _, sd := range fp.signals {
		if sd.storedName() != result {
			continue
		}
		tn, _ := pkg.Scope().Lookup(sd.decl).(*types.TypeName)
		if tn == nil {
			return nil, fmt.Sprintf("its result step, signal %s, has an unexported payload type %s: export it", result, sd.decl)
		}
		fw.result, fw.output = result, tn.Type()
		fw.skippable = fp.skippable(pkg, sd, map[*foreignDecl]bool{})
		return fw, ""
	}
	return nil, fmt.Sprintf("its result=%s names no step: %s", result, fix)
}

// skippable reports whether a node of another package may end SKIPPED, as
// far as its directives tell: it has skip= predicates, it is a signal wait
// with timeout=, one of its after= parents may be skipped, or it is a child
// step. Every parent is taken as required, which errs towards dag.Maybe.
func (fp *foreignPkg) skippable(pkg *types.Package, d *foreignDecl, seen map[*foreignDecl]bool) bool {
	if seen[d] {
		return false
	}
	seen[d] = true
	if d.args["skip"] != "" || d.dir == dirSignal && d.args["timeout"] != "" {
		return true
	}
	if d.dir == dirChild {
		return true // skipped when its child's result step is: not followed here
	}
	for _, name := range strings.Split(d.args["after"], ",") {
		if name == "" {
			continue
		}
		p := fp.funcs[name]
		if p == nil {
			for _, sd := range fp.signals {
				if sd.storedName() == name {
					p = sd
				}
			}
		}
		if p == nil || fp.skippable(pkg, p, seen) {
			return true // a parent dagen cannot read may be skipped
		}
	}
	return false
}
