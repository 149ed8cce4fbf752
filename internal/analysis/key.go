package analysis

import (
	"cmp"
	"fmt"
	"go/token"
	"go/types"
	"reflect"
	"slices"
	"strings"
	"unicode"
)

// Field keys: key=Path and per=Path on //dag:workflow name a field of the
// input, directly (key=ID) or through a dotted path of struct fields
// (key=Customer.ID), whose value is a run's idempotency key (key=) or its
// concurrency key (per=, the runs that concurrency= caps together). The
// generated Definition.Key and Definition.ConcurrencyKey read it from the
// run's encoded input, the JSON the engine stores and every step decodes,
// so the field must survive that round trip; it must be reachable without
// a pointer, whose nil would leave no key; and it must be a string or an
// integer, which the key is written from. Both keys follow these rules,
// and their messages differ only by the key they name; so does per= of a
// rate-limited //dag:step (see ratelimit.go), whose value picks the
// bucket, read by the generated StepRateLimit.Key.

// fieldKey is a key of //dag:workflow or //dag:step whose value is a path
// to a field of the input.
type fieldKey struct {
	name string // the directive key: "key", "per"
	noun string // what the field's value is to a run: "key", "concurrency key", "rate limit key"
}

var (
	idempotencyKey = fieldKey{name: "key", noun: "key"}
	concurrencyKey = fieldKey{name: "per", noun: "concurrency key"}
)

// noPointers says why a pointer cannot be on the path.
func (fk fieldKey) noPointers() string {
	return fmt.Sprintf("pointers are not allowed on a %s path, a nil would have no %s", fk.noun, fk.noun)
}

// readFrom says where the key is read from, which is why a field JSON
// leaves out cannot be it.
func (fk fieldKey) readFrom() string {
	return "the " + fk.noun + " is read from the stored (JSON) input"
}

// readFieldKey reads key fk of a workflow and resolves its path in the
// input type. It returns nil when the key is not given or is wrong. Every
// problem is reported at the part of the value it is about; the path is
// not looked at past the first.
func (a *analyzer) readFieldKey(f *found, w *Workflow, fk fieldKey) *Key {
	ar, ok := f.args[fk.name]
	if !ok {
		return nil
	}
	elems, ok := a.pathElems(fk, ar)
	if !ok {
		return nil
	}
	t, ok := a.resolvePath(fk, ar, elems, w)
	if !ok {
		return nil
	}
	kind, ok := keyKindOf(t)
	if !ok {
		a.errorf(ar.ValuePos, ar.End, BadKeyType, "%s=%s has type %s: a %s is a string or an integer", fk.name, ar.Value, a.typeString(t), fk.noun)
		return nil
	}
	return &Key{Path: ar.Value, Type: t, Kind: kind, Pos: a.position(ar.ValuePos)}
}

// pathElem is one field name of a dotted path, with its position.
type pathElem struct {
	Name     string
	Pos, End token.Pos
}

// pathElems splits the value of ar on dots and checks that each part is a
// field name.
func (a *analyzer) pathElems(fk fieldKey, ar arg) ([]pathElem, bool) {
	offset := ar.ValuePos
	if ar.Quoted {
		offset++ // past the opening quote; exact unless the value has escapes
	}
	var elems []pathElem
	start := 0
	for i := 0; i <= len(ar.Value); i++ {
		if i == len(ar.Value) || ar.Value[i] == '.' {
			elems = append(elems, pathElem{Name: ar.Value[start:i], Pos: offset + token.Pos(start), End: offset + token.Pos(i)})
			start = i + 1
		}
	}
	var names []string
	empty := false
	for _, e := range elems {
		if e.Name == "" {
			empty = true
			continue
		}
		names = append(names, e.Name)
	}
	if empty {
		msg := fmt.Sprintf("%s=%s: empty field name in the path", fk.name, ar.Value)
		if len(names) > 0 {
			msg += "; write " + fk.name + "=" + strings.Join(names, ".")
		}
		a.errorf(ar.ValuePos, ar.End, MalformedDirective, "%s", msg)
		return nil, false
	}
	for _, e := range elems {
		if !token.IsIdentifier(e.Name) {
			a.errorf(e.Pos, e.End, MalformedDirective,
				"%[1]s=%[2]s: %[3]q is not a field name; %[1]s= takes a field of the input or a dotted path to one, as in %[1]s=ID or %[1]s=Customer.ID", fk.name, ar.Value, e.Name)
			return nil, false
		}
	}
	return elems, true
}

// resolvePath follows the path from the workflow's input type, field by
// field, and returns the type of the last field.
func (a *analyzer) resolvePath(fk fieldKey, ar arg, elems []pathElem, w *Workflow) (types.Type, bool) {
	t := w.Input
	for i, e := range elems {
		// owner names the value whose field e is, as the user wrote it:
		// the input type, or the path so far.
		owner := w.TypeName
		if i > 0 {
			owner = joinElems(elems[:i])
		}
		path := joinElems(elems[:i+1])
		st, ok := t.Underlying().(*types.Struct)
		if !ok {
			if i == 0 {
				a.errorf(e.Pos, e.End, BadKeyPath, "%s=%s: the input %s is not a struct (its type is %s): a %s path goes through struct fields",
					fk.name, ar.Value, w.TypeName, a.typeString(t.Underlying()), fk.noun)
			} else {
				a.errorf(e.Pos, e.End, BadKeyPath, "%s=%s: %s has type %s, which has no fields: a %s path goes through struct fields",
					fk.name, ar.Value, owner, a.typeString(t), fk.noun)
			}
			return nil, false
		}
		field, ok := a.lookupField(fk, ar, e, t, st, owner, path)
		if !ok {
			return nil, false
		}
		if _, isPtr := field.Type().Underlying().(*types.Pointer); isPtr {
			msg := fmt.Sprintf("%s=%s: %s has type %s: %s", fk.name, ar.Value, path, a.typeString(field.Type()), fk.noPointers())
			if p, ok := types.Unalias(field.Type()).(*types.Pointer); ok {
				msg += "; make it a " + a.typeString(p.Elem())
			}
			a.errorf(e.Pos, e.End, BadKeyPath, "%s", msg)
			return nil, false
		}
		t = field.Type()
	}
	return t, true
}

func joinElems(elems []pathElem) string {
	names := make([]string, len(elems))
	for i, e := range elems {
		names[i] = e.Name
	}
	return strings.Join(names, ".")
}

// lookupField finds field e of struct type t (underlying st), directly or
// promoted from an embedded struct, the way the selector in the generated
// code will, and checks that it survives the JSON round trip.
func (a *analyzer) lookupField(fk fieldKey, ar arg, e pathElem, t types.Type, st *types.Struct, owner, path string) (*types.Var, bool) {
	obj, index, indirect := types.LookupFieldOrMethod(t, false, a.pkg.Types, e.Name)
	// A method with a pointer receiver is found on a value as no object,
	// with indirect set.
	if _, isFunc := obj.(*types.Func); isFunc || obj == nil && indirect {
		a.errorf(e.Pos, e.End, BadKeyPath, "%s=%s: %s is a method of %s, not a field: a %s is read from a field of the stored input",
			fk.name, ar.Value, e.Name, owner, fk.noun)
		return nil, false
	}
	if obj, ok := obj.(*types.Var); ok {
		chain := fieldChain(st, index)
		if indirect {
			for _, c := range chain[:len(chain)-1] {
				if _, isPtr := c.Var.Type().Underlying().(*types.Pointer); isPtr {
					a.errorf(e.Pos, e.End, BadKeyPath, "%s=%s: %s is promoted through the embedded pointer %s: %s; embed %s",
						fk.name, ar.Value, e.Name, a.typeString(c.Var.Type()), fk.noPointers(), a.typeString(c.Var.Type().Underlying().(*types.Pointer).Elem()))
					return nil, false
				}
			}
		}
		if why := a.jsonLoses(fk, t, st, index, strings.TrimSuffix(path, e.Name)); why != "" {
			a.errorf(e.Pos, e.End, LostKeyField, "%s=%s: %s", fk.name, ar.Value, why)
			return nil, false
		}
		return obj, true
	}
	if index != nil {
		paths := promotedPaths(st, e.Name)
		msg := fmt.Sprintf("%s=%s: %s is ambiguous in %s: it is promoted from more than one embedded field at the same depth", fk.name, ar.Value, e.Name, owner)
		if len(paths) > 1 {
			prefix := strings.TrimSuffix(path, e.Name)
			msg += fmt.Sprintf(" (%s); name one, as in %s=%s%s", strings.Join(paths, ", "), fk.name, prefix, paths[0])
		}
		a.errorf(e.Pos, e.End, BadKeyPath, "%s", msg)
		return nil, false
	}
	// Unexported fields of another package's struct are not found by the
	// lookup above, which looks from this package.
	for f := range st.Fields() {
		if f.Name() == e.Name && !f.Exported() {
			a.errorf(e.Pos, e.End, LostKeyField, "%s=%s: %s is an unexported field of %s, a type of another package: %s, which leaves it out; use a field of your own",
				fk.name, ar.Value, e.Name, a.typeString(t), fk.readFrom())
			return nil, false
		}
	}
	msg := fmt.Sprintf("%s=%s: %s has no field %s", fk.name, ar.Value, owner, e.Name)
	if s := suggest(e.Name, fieldNames(st)); s != "" {
		msg += "; did you mean " + s + "?"
	}
	a.errorf(e.Pos, e.End, UnknownKeyField, "%s", msg)
	return nil, false
}

// chainField is one field on the way to a promoted field, with the tag it
// has in its struct.
type chainField struct {
	Var *types.Var
	Tag string
}

// fieldChain returns the fields that index selects in st, one per level:
// the embedded fields a promoted field comes through, then the field.
func fieldChain(st *types.Struct, index []int) []chainField {
	var out []chainField
	for k, i := range index {
		out = append(out, chainField{Var: st.Field(i), Tag: st.Tag(i)})
		if k == len(index)-1 {
			break
		}
		ft := st.Field(i).Type()
		if p, ok := ft.Underlying().(*types.Pointer); ok {
			ft = p.Elem()
		}
		st = ft.Underlying().(*types.Struct)
	}
	return out
}

// fieldNames returns the names of the fields of st, its own in order, then
// those promoted from embedded structs, each once: the candidates of a
// "did you mean".
func fieldNames(st *types.Struct) []string {
	var names []string
	seen := map[string]bool{}
	visited := map[types.Type]bool{}
	level := []*types.Struct{st}
	for len(level) > 0 {
		var next []*types.Struct
		for _, s := range level {
			for f := range s.Fields() {
				if !seen[f.Name()] {
					seen[f.Name()] = true
					names = append(names, f.Name())
				}
				if es := embeddedStruct(f); es != nil && !visited[es] {
					visited[es] = true
					next = append(next, es)
				}
			}
		}
		level = next
	}
	return names
}

// promotedPaths returns the paths ("Billing.ID") to the fields named name
// at the shallowest depth they are found in st.
func promotedPaths(st *types.Struct, name string) []string {
	type node struct {
		st     *types.Struct
		prefix string
	}
	level := []node{{st: st}}
	visited := map[types.Type]bool{}
	for len(level) > 0 {
		var found []string
		var next []node
		for _, n := range level {
			for f := range n.st.Fields() {
				if f.Name() == name {
					found = append(found, n.prefix+name)
				}
				if es := embeddedStruct(f); es != nil && !visited[es] {
					visited[es] = true
					next = append(next, node{st: es, prefix: n.prefix + f.Name() + "."})
				}
			}
		}
		if len(found) > 0 {
			return found
		}
		level = next
	}
	return nil
}

// jsonLoses explains why encoding/json does not carry the field at index
// of struct type t (underlying st) from the encoded input back into the
// decoded one, or returns "". Types that say themselves how they are
// encoded (MarshalJSON and the like) are trusted. prefix is the Go path to
// t from the input, for messages ("Customer.").
func (a *analyzer) jsonLoses(fk fieldKey, t types.Type, st *types.Struct, index []int, prefix string) string {
	if n, ok := types.Unalias(t).(*types.Named); ok && roundTrips(n) {
		return ""
	}
	all, kept := jsonFields(st)
	for _, f := range kept {
		switch {
		case slices.Equal(f.index, index):
			return ""
		case len(f.index) < len(index) && slices.Equal(f.index, index[:len(f.index)]):
			// An embedded struct with a JSON name of its own is encoded
			// as an object, not promoted: look into it.
			chain := fieldChain(st, f.index)
			ft := chain[len(chain)-1].Var.Type()
			sub, ok := ft.Underlying().(*types.Struct)
			if !ok {
				return "" // a pointer, reported by the caller
			}
			return a.jsonLoses(fk, ft, sub, index[len(f.index):], prefix+goPath(chain)+".")
		}
	}
	chain := fieldChain(st, index)
	for k, c := range chain {
		name := prefix + goPath(chain[:k+1])
		if reflect.StructTag(c.Tag).Get("json") == "-" {
			return fmt.Sprintf(`%s is tagged json:"-": %s, which leaves it out; drop the tag`, name, fk.readFrom())
		}
		if !c.Var.Exported() && (k == len(chain)-1 || embeddedStruct(c.Var) == nil) {
			return fmt.Sprintf("%s is unexported: %s; export it", name, fk.readFrom())
		}
	}
	// A name conflict: encoding/json keeps one field of a JSON name, the
	// shallowest (a tagged one among equals), or none when they tie.
	name := prefix + goPath(chain)
	var mine *jsonField
	for i := range all {
		if slices.Equal(all[i].index, index) {
			mine = &all[i]
		}
	}
	if mine == nil {
		return name + " is not encoded by encoding/json: " + fk.readFrom()
	}
	for _, f := range kept {
		if f.name == mine.name {
			return fmt.Sprintf("encoding/json leaves %s out, because %s%s has the same JSON name %q and wins: %s; give one of them another JSON name",
				name, prefix, goPath(fieldChain(st, f.index)), mine.name, fk.readFrom())
		}
	}
	var others []string
	for _, f := range all {
		if f.name == mine.name && !slices.Equal(f.index, index) && len(f.index) == len(index) {
			others = append(others, prefix+goPath(fieldChain(st, f.index)))
		}
	}
	return fmt.Sprintf("encoding/json leaves %s out, because %s has the same JSON name %q at the same depth: %s; give one of them another JSON name",
		name, joinAnd(others), mine.name, fk.readFrom())
}

// goPath is the Go selector path of a chain of fields: "Inner.ID".
func goPath(chain []chainField) string {
	names := make([]string, len(chain))
	for i, c := range chain {
		names[i] = c.Var.Name()
	}
	return strings.Join(names, ".")
}

// jsonField is a struct field as encoding/json sees it.
type jsonField struct {
	name   string // the JSON name
	tagged bool   // named by its json tag
	index  []int
}

// jsonFields returns the fields that encoding/json encodes for struct type
// st, following its rules (encoding/json typeFields): exported fields and
// those promoted from embedded structs, less the json:"-" ones, named by
// their tags, where of several fields of one JSON name only the
// shallowest, or the tagged one among the shallowest, is kept, and none
// when that leaves a tie. all is every candidate, kept those kept.
func jsonFields(st *types.Struct) (all, kept []jsonField) {
	type level struct {
		st    *types.Struct
		index []int
	}
	next := []level{{st: st}}
	var count, nextCount map[*types.Struct]int
	visited := map[*types.Struct]bool{}
	for len(next) > 0 {
		current := next
		next = nil
		count, nextCount = nextCount, map[*types.Struct]int{}
		for _, l := range current {
			if visited[l.st] {
				continue
			}
			visited[l.st] = true
			for i := range l.st.NumFields() {
				f := l.st.Field(i)
				if f.Embedded() {
					if !f.Exported() && embeddedStruct(f) == nil {
						continue
					}
				} else if !f.Exported() {
					continue
				}
				tag := reflect.StructTag(l.st.Tag(i)).Get("json")
				if tag == "-" {
					continue
				}
				name, _, _ := strings.Cut(tag, ",")
				if !validJSONTag(name) {
					name = ""
				}
				index := append(slices.Clip(l.index), i)
				es := embeddedStruct(f)
				if name != "" || !f.Embedded() || es == nil {
					tagged := name != ""
					if name == "" {
						name = f.Name()
					}
					all = append(all, jsonField{name: name, tagged: tagged, index: index})
					if count[l.st] > 1 {
						// The same struct reached twice at this depth:
						// a duplicate, so that the tie removes it.
						all = append(all, all[len(all)-1])
					}
					continue
				}
				nextCount[es]++
				if nextCount[es] == 1 {
					next = append(next, level{st: es, index: index})
				}
			}
		}
	}
	sorted := slices.Clone(all)
	slices.SortStableFunc(sorted, func(x, y jsonField) int {
		if c := cmp.Or(strings.Compare(x.name, y.name), cmp.Compare(len(x.index), len(y.index))); c != 0 {
			return c
		}
		if x.tagged != y.tagged {
			if x.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(x.index, y.index)
	})
	for i := 0; i < len(sorted); {
		j := i + 1
		for j < len(sorted) && sorted[j].name == sorted[i].name {
			j++
		}
		group := sorted[i:j]
		if len(group) == 1 || len(group[0].index) != len(group[1].index) || group[0].tagged != group[1].tagged {
			kept = append(kept, group[0])
		}
		i = j
	}
	return all, kept
}

// validJSONTag reports whether encoding/json takes name from a json tag
// as a field's name.
func validJSONTag(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// keyKindOf says how a key is written from a value of type t, and false
// when t is neither a string nor an integer.
func keyKindOf(t types.Type) (KeyKind, bool) {
	b, ok := t.Underlying().(*types.Basic)
	if !ok {
		return 0, false
	}
	switch info := b.Info(); {
	case info&types.IsString != 0:
		return KeyString, true
	case info&types.IsInteger != 0 && info&types.IsUnsigned != 0:
		return KeyUnsigned, true
	case info&types.IsInteger != 0:
		return KeySigned, true
	}
	return 0, false
}
