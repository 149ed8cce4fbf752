package analysis

import (
	"fmt"
	"go/token"
	"go/types"
	"strings"
)

// checkLostFields warns about the fields of t that do not survive the
// JSON round trip between steps, once per type that holds them: a value
// that reaches the next step with fields quietly zeroed is a bug found in
// production, not at go generate. what names the value ("output of step
// Charge"); who says who gets the fields zeroed.
func (a *analyzer) checkLostFields(t types.Type, pos token.Pos, what, who string) {
	if a.lossChecked == nil {
		a.lossChecked = map[types.Type]bool{}
	}
	lost := lostFields(t, a.lossChecked)
	var owners []types.Type
	byOwner := map[types.Type][]lostField{}
	for _, l := range lost {
		if byOwner[l.Owner] == nil {
			owners = append(owners, l.Owner)
		}
		byOwner[l.Owner] = append(byOwner[l.Owner], l)
	}
	for _, owner := range owners {
		fields := byOwner[owner]
		var names, unexported, tagged []string
		var related []Related
		for _, l := range fields {
			why := "unexported"
			if l.Tagged {
				why = `json:"-"`
				tagged = append(tagged, l.Field.Name())
			} else {
				unexported = append(unexported, l.Field.Name())
			}
			names = append(names, l.Field.Name()+" ("+why+")")
			if l.Field.Pkg() == a.pkg.Types && l.Field.Pos().IsValid() {
				related = append(related, Related{Pos: a.position(l.Field.Pos()), Message: "field " + l.Field.Name() + " of " + a.typeString(owner)})
			}
		}
		ownerName := a.typeString(owner)
		them, field := "it", "field "
		if len(fields) > 1 {
			them, field = "them", "fields "
		}
		var fixes []string
		if len(unexported) > 0 {
			fixes = append(fixes, "export "+joinAnd(unexported))
		}
		if len(tagged) > 0 {
			fixes = append(fixes, `drop json:"-" from `+joinAnd(tagged))
		}
		fix := strings.Join(fixes, ", and ")
		n, named := owner.(*types.Named)
		if named && n.Obj().Pkg() == a.pkg.Types {
			fix += ", or give " + ownerName + " MarshalJSON and UnmarshalJSON methods"
		} else if named {
			fix = ownerName + " is not this package's to change: store a type of your own that JSON can round-trip"
		}
		a.report(pos, token.NoPos, LostField, Warning,
			fmt.Sprintf("%s: JSON skips %s%s of %s, so %s %s zeroed; %s",
				what, field, joinAnd(names), ownerName, who, them, fix), related...)
	}
}
