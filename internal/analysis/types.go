package analysis

import (
	"go/types"
	"reflect"
)

// DagPkgPath is the import path of the package holding dag.Maybe and
// dag.Failure.
const DagPkgPath = "github.com/dagenhq/dagen/runtime/dag"

// isNamed reports whether t is the named type path.name.
func isNamed(t types.Type, path, name string) bool {
	n, ok := types.Unalias(t).(*types.Named)
	if !ok {
		return false
	}
	obj := n.Origin().Obj()
	return obj.Pkg() != nil && obj.Pkg().Path() == path && obj.Name() == name
}

func isContext(t types.Type) bool { return isNamed(t, "context", "Context") }

func isError(t types.Type) bool { return types.Identical(t, types.Universe.Lookup("error").Type()) }

func isBool(t types.Type) bool {
	b, ok := types.Unalias(t).(*types.Basic)
	return ok && b.Kind() == types.Bool
}

// maybeOf reports whether t is dag.Maybe[T] and returns T.
func maybeOf(t types.Type) (types.Type, bool) {
	if !isNamed(t, DagPkgPath, "Maybe") {
		return nil, false
	}
	args := types.Unalias(t).(*types.Named).TypeArgs()
	if args.Len() != 1 {
		return nil, false
	}
	return args.At(0), true
}

// unMaybe returns T for dag.Maybe[T], and t for any other t.
func unMaybe(t types.Type) types.Type {
	if inner, ok := maybeOf(t); ok {
		return inner
	}
	return t
}

// unencodable explains why values of t cannot be stored as JSON, or
// returns "". It looks for the kinds encoding/json rejects: channels, funcs,
// unsafe pointers, complex numbers and maps with such keys, and for
// interfaces with methods (such as error), which it writes but cannot read
// back. Types with their own MarshalJSON or MarshalText are trusted.
func unencodable(t types.Type, str func(types.Type) string) string {
	seen := map[types.Type]bool{}
	var walk func(t types.Type, path string) string
	walk = func(t types.Type, path string) string {
		t = types.Unalias(t)
		if seen[t] {
			return ""
		}
		where := func(what string) string {
			if path == "" {
				return "it is " + what
			}
			return path + " is " + what
		}
		if n, ok := t.(*types.Named); ok {
			seen[t] = true
			if hasMethod(n, "MarshalJSON") || hasMethod(n, "MarshalText") {
				return ""
			}
			if it, ok := n.Underlying().(*types.Interface); ok {
				return nonEmptyInterface(it, str(n), where)
			}
			return walk(n.Underlying(), path)
		}
		switch t := t.(type) {
		case *types.Interface:
			return nonEmptyInterface(t, str(t), where)
		case *types.Basic:
			switch t.Kind() {
			case types.Complex64, types.Complex128:
				return where("a complex number (" + t.Name() + ")")
			case types.UnsafePointer:
				return where("an unsafe.Pointer")
			}
		case *types.Chan:
			return where("a channel (" + str(t) + ")")
		case *types.Signature:
			return where("a func (" + str(t) + ")")
		case *types.Pointer:
			return walk(t.Elem(), path)
		case *types.Slice:
			return walk(t.Elem(), path+"[i]")
		case *types.Array:
			return walk(t.Elem(), path+"[i]")
		case *types.Map:
			if !validMapKey(t.Key()) {
				return where("a map with key type " + str(t.Key()) + ", which JSON cannot encode")
			}
			return walk(t.Elem(), path+"[k]")
		case *types.Struct:
			for i := range t.NumFields() {
				f := t.Field(i)
				if !f.Exported() && !f.Embedded() {
					continue
				}
				if reflect.StructTag(t.Tag(i)).Get("json") == "-" {
					continue
				}
				p := f.Name()
				if path != "" {
					p = path + "." + p
				} else {
					p = "field " + p
				}
				if why := walk(f.Type(), p); why != "" {
					return why
				}
			}
		}
		return ""
	}
	return walk(t, "")
}

// nonEmptyInterface explains why an interface with methods cannot be
// stored: encoding/json writes the dynamic value, but cannot decode it back
// into an interface it does not know a concrete type for. The empty
// interface decodes (into maps, slices, strings, float64s and bools), so
// it passes.
func nonEmptyInterface(t *types.Interface, name string, where func(string) string) string {
	if t.Empty() {
		return ""
	}
	return where("an interface (" + name + "), which JSON can write but cannot decode back into")
}

func hasMethod(n *types.Named, name string) bool {
	ms := types.NewMethodSet(types.NewPointer(n))
	return ms.Lookup(nil, name) != nil
}

func validMapKey(t types.Type) bool {
	if n, ok := types.Unalias(t).(*types.Named); ok && hasMethod(n, "MarshalText") {
		return true
	}
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&(types.IsString|types.IsInteger) != 0
}

// lostField is a struct field that encoding/json leaves out, so a value
// stored and read back has it zeroed.
type lostField struct {
	Owner  types.Type // the struct type holding the field, usually named
	Field  *types.Var
	Tagged bool // skipped for json:"-" rather than for being unexported
}

// lostFields returns the fields of t, and of the types it holds (struct
// fields, pointers, slices, arrays, map values), that encoding/json skips:
// unexported fields and fields tagged json:"-". Types with their own JSON
// or text methods are trusted, and not looked into. Each type is looked at
// once, across calls: checked holds the types already seen, so a type used
// twice is reported once and recursive types end.
//
// A field tagged json:"-" whose type JSON cannot hold (a func, a channel,
// anything [unencodable] refuses) is left out: the tag says its author
// knows the field is not carried, and dropping the tag, the only advice
// there could be, would not make JSON carry it either.
func lostFields(t types.Type, checked map[types.Type]bool) []lostField {
	var out []lostField
	var walk func(t types.Type, owner types.Type)
	walk = func(t types.Type, owner types.Type) {
		t = types.Unalias(t)
		switch u := t.(type) {
		case *types.Named:
			if checked[u] {
				return
			}
			checked[u] = true
			if roundTrips(u) {
				return
			}
			walk(u.Underlying(), u)
		case *types.Pointer:
			walk(u.Elem(), nil)
		case *types.Slice:
			walk(u.Elem(), nil)
		case *types.Array:
			walk(u.Elem(), nil)
		case *types.Map:
			walk(u.Elem(), nil)
		case *types.Struct:
			if owner == nil {
				if checked[u] {
					return
				}
				checked[u] = true
				owner = u
			}
			for i := range u.NumFields() {
				f := u.Field(i)
				tag := reflect.StructTag(u.Tag(i)).Get("json")
				switch {
				case tag == "-":
					if unencodable(f.Type(), types.Type.String) == "" {
						out = append(out, lostField{Owner: owner, Field: f, Tagged: true})
					}
				case f.Embedded() && !f.Exported():
					// encoding/json promotes the exported fields of an
					// embedded struct, exported or not; anything else
					// embedded and unexported is skipped.
					if embeddedStruct(f) != nil {
						walk(f.Type(), nil)
					} else {
						out = append(out, lostField{Owner: owner, Field: f})
					}
				case !f.Exported():
					out = append(out, lostField{Owner: owner, Field: f})
				default:
					walk(f.Type(), nil)
				}
			}
		}
	}
	walk(t, nil)
	return out
}

// embeddedStruct returns the struct type that embedded field f holds,
// through a pointer or not, or nil.
func embeddedStruct(f *types.Var) *types.Struct {
	if !f.Embedded() {
		return nil
	}
	t := f.Type()
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	st, _ := t.Underlying().(*types.Struct)
	return st
}

// roundTrips reports whether a named type says itself how it is encoded:
// it implements json.Marshaler or json.Unmarshaler, or
// encoding.TextMarshaler or TextUnmarshaler (on the value or the pointer).
func roundTrips(n *types.Named) bool {
	for _, m := range []string{"MarshalJSON", "UnmarshalJSON", "MarshalText", "UnmarshalText"} {
		if hasMethod(n, m) {
			return true
		}
	}
	return false
}
