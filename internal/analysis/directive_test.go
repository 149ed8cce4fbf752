package analysis

import (
	"go/ast"
	"go/token"
	"strings"
	"testing"
)

// comment returns a // comment whose first slash is at offset 10 of a file.
func comment(text string) *ast.Comment { return &ast.Comment{Slash: token.Pos(10), Text: text} }

func TestParseDirectiveColumns(t *testing.T) {
	text := `//dag:step after=A,B name="charge it" retry=3`
	d, errs := parseDirective(comment(text))
	if len(errs) != 0 {
		t.Fatalf("errors: %+v", errs)
	}
	if d.Name != "step" {
		t.Fatalf("name %q", d.Name)
	}
	want := []struct {
		key, value string
		quoted     bool
	}{{"after", "A,B", false}, {"name", "charge it", true}, {"retry", "3", false}}
	if len(d.Args) != len(want) {
		t.Fatalf("args %+v", d.Args)
	}
	for i, w := range want {
		a := d.Args[i]
		if a.Key != w.key || a.Value != w.value || a.Quoted != w.quoted {
			t.Errorf("arg %d = %+v, want %+v", i, a, w)
		}
		// Positions are exact byte offsets into the comment.
		if off := int(a.KeyPos - 10); !strings.HasPrefix(text[off:], w.key+"=") {
			t.Errorf("arg %s: key offset %d points at %q", w.key, off, text[off:])
		}
	}
	items := d.Args[0].items()
	if len(items) != 2 || items[1].Text != "B" || text[items[1].Pos-10:items[1].End-10] != "B" {
		t.Errorf("items %+v", items)
	}
	spaced, _ := parseDirective(comment(`//dag:step after=A , B`))
	if it := spaced.Args[0].items(); len(it) != 2 || it[0].Text != "A" || it[1].Text != "B" || int(it[1].Pos-10) != len(`//dag:step after=A , `) {
		t.Errorf("spaced items %+v", it)
	}
	if q := d.Args[1].items(); text[q[0].Pos-10:q[0].End-10] != "charge it" {
		t.Errorf("quoted item at %q", text[q[0].Pos-10:q[0].End-10])
	}
}

func TestParseDirectiveErrors(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string // offsets' text of each error, in order
	}{
		{`//dag:step after`, []string{"after"}},
		{`//dag:step =x a=1`, []string{"=x"}},
		{`//dag:step name="open`, []string{`"open`}},
		{`//dag:step name="a"b c=1`, []string{"b"}},
		{`//dag:step name=a"b`, []string{`a"b`}},
		{`//dag:step   `, nil},
		{`//dag:step after=A, B`, []string{" B"}},
		{`//dag:step after=A ,B, C retry=1`, []string{" ,B, C"}},
		{`//dag:step skip=p,	q`, []string{"\tq"}},
		{`//dag:step after=A, retry=1`, nil}, // a trailing comma, then a key: EmptyValue later
		{`//dag:step name=A, B`, []string{"B"}},
		{`//dag:step each=A, B`, []string{"B"}}, // each= names one parent: not a list
		{`//dag:schedule cron=0 3 * * * tenant=x`, []string{"0 3 * * *"}},
		{`//dag:schedule cron="0 3 * * *" tenant=x`, nil},
		{`//dag:step cron=0 3`, []string{"3"}}, // only a schedule's cron= is read across spaces
	} {
		_, errs := parseDirective(comment(tc.text))
		if len(errs) != len(tc.want) {
			t.Errorf("%s: errors %+v, want %d", tc.text, errs, len(tc.want))
			continue
		}
		for i, e := range errs {
			if got := tc.text[e.Pos-10 : e.End-10]; got != tc.want[i] {
				t.Errorf("%s: error %d covers %q, want %q", tc.text, i, got, tc.want[i])
			}
		}
	}
}

// TestParseUnquotedCron checks that an unquoted cron= expression with
// spaces is read whole, with one error, and that the argument after it is
// an argument of its own.
func TestParseUnquotedCron(t *testing.T) {
	text := `//dag:schedule cron=0 3 * * * tenant=system`
	d, errs := parseDirective(comment(text))
	if len(errs) != 1 || !strings.Contains(errs[0].Msg, `cron="0 3 * * *"`) {
		t.Fatalf("errors %+v", errs)
	}
	if len(d.Args) != 2 || d.Args[0].Value != "0 3 * * *" || d.Args[1].Key != "tenant" || d.Args[1].Value != "system" {
		t.Errorf("args %+v", d.Args)
	}
	if got := text[d.Args[0].ValuePos-10 : d.Args[0].End-10]; got != "0 3 * * *" {
		t.Errorf("value covers %q", got)
	}
}

func FuzzParseDirective(f *testing.F) {
	for _, s := range []string{`//dag:step after=A,B name="x y" retry=3`, `//dag:step "`, "//dag:step a=`b` c", `//dag:x =`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		text := directivePrefix + s
		d, errs := parseDirective(comment(text))
		in := func(p token.Pos) bool { return p >= 10 && int(p-10) <= len(text) }
		for _, a := range d.Args {
			if !in(a.KeyPos) || !in(a.ValuePos) || !in(a.End) {
				t.Fatalf("arg %+v out of %q", a, text)
			}
			for _, it := range a.items() {
				if it.Pos > it.End {
					t.Fatalf("item %+v", it)
				}
			}
		}
		for _, e := range errs {
			if !in(e.Pos) || !in(e.End) || e.Pos > e.End {
				t.Fatalf("error %+v out of %q", e, text)
			}
		}
	})
}

func TestNearMiss(t *testing.T) {
	for text, want := range map[string]string{
		"// dag:step":           "step",
		"//\tdag:sleep after=A": "sleep",
		"/* dag:workflow */":    "workflow",
		"/*dag:onfailure*/":     "onfailure",
		"//dag:step":            "",
		"// dag: the package":   "",
		"// dagger:step":        "",
		"// dag:steps":          "",
	} {
		got, ok := nearMiss(text)
		if got != want || ok != (want != "") {
			t.Errorf("nearMiss(%q) = %q, %v; want %q", text, got, ok, want)
		}
	}
}

func TestSuggest(t *testing.T) {
	steps := []string{"Validate", "Charge", "Ship"}
	for name, want := range map[string]string{
		"Validat":  "Validate",
		"validate": "Validate",
		"Chrage":   "Charge",
		"ship":     "Ship",
		"Valdiate": "Validate", // a swap is one edit
		"Refund":   "",
		"X":        "",
	} {
		if got := suggest(name, steps); got != want {
			t.Errorf("suggest(%q) = %q, want %q", name, got, want)
		}
	}
	if got := suggest("stpe", directiveNames()); got != "step" {
		t.Errorf("suggest(stpe) = %q, want step", got)
	}
	// One- and two-letter names match only up to case.
	for name, want := range map[string]string{"_": "", "B": "", "ba": "", "a": "A", "AB": "Ab"} {
		if got := suggest(name, []string{"A", "Ab"}); got != want {
			t.Errorf("suggest(%q, [A Ab]) = %q, want %q", name, got, want)
		}
	}
	for _, tc := range []struct {
		a, b string
		want int
	}{{"kitten", "sitting", 3}, {"stpe", "step", 1}, {"ca", "abc", 3}, {"", "abc", 3}, {"héllo", "hlélo", 1}} {
		if d := editDistance(tc.a, tc.b); d != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.want)
		}
	}
}

func TestParseErrorPos(t *testing.T) {
	for s, want := range map[string]token.Position{
		"/a/b.go:3:4":   {Filename: "/a/b.go", Line: 3, Column: 4},
		"/a/b.go:3":     {Filename: "/a/b.go", Line: 3},
		"C:/x/b.go:3:4": {Filename: "C:/x/b.go", Line: 3, Column: 4},
		"-":             {},
		"":              {},
	} {
		if got := parseErrorPos(s); got != want {
			t.Errorf("parseErrorPos(%q) = %+v, want %+v", s, got, want)
		}
	}
}

func TestDiagnosticString(t *testing.T) {
	d := Diagnostic{
		Pos:      token.Position{Filename: "order.go", Line: 3, Column: 7},
		Code:     Cycle,
		Message:  "cycle in workflow Order: A → B → A",
		Related:  []Related{{Pos: token.Position{Filename: "order.go", Line: 2, Column: 18}, Message: "B runs after A"}, {Message: "A runs after B"}},
		Severity: Error,
	}
	want := "order.go:3:7: cycle in workflow Order: A → B → A\n\torder.go:2:18: B runs after A\n\tA runs after B"
	if got := d.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	w := Diagnostic{Pos: token.Position{Filename: "x.go", Line: 1, Column: 1}, Severity: Warning, Message: "two\nlines"}
	if got := w.String(); got != "x.go:1:1: warning: two\n\tlines" {
		t.Errorf("warning: %q", got)
	}
	if Cycle.String() != "Cycle" || Code(999).String() != "Code(999)" {
		t.Errorf("code names: %s %s", Cycle, Code(999))
	}
	for c := Code(1); c < numCodes; c++ {
		if codeNames[c] == "" {
			t.Errorf("code %d has no name", c)
		}
	}
}

func TestSortDiagnostics(t *testing.T) {
	ds := []Diagnostic{
		{Pos: token.Position{Filename: "b.go", Line: 1, Column: 1}, Message: "b"},
		{Pos: token.Position{Filename: "a.go", Line: 2, Column: 1}, Message: "a2"},
		{Pos: token.Position{Filename: "a.go", Line: 1, Column: 9}, Message: "a1"},
	}
	SortDiagnostics(ds)
	var got []string
	for _, d := range ds {
		got = append(got, d.Message)
	}
	if strings.Join(got, ",") != "a1,a2,b" {
		t.Errorf("order %v", got)
	}
	if HasErrors([]Diagnostic{{Severity: Warning}}) || !HasErrors([]Diagnostic{{Severity: Warning}, {Severity: Error}}) {
		t.Error("HasErrors")
	}
}
