package analysis

import (
	"cmp"
	"fmt"
	"go/token"
	"io"
	"slices"
	"strings"
)

// Severity says whether a diagnostic stops generation.
type Severity int

// Severities.
const (
	// Error diagnostics stop generation for their package.
	Error Severity = iota
	// Warning diagnostics are printed, but code is still generated.
	Warning
)

// String returns "error" or "warning".
func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "error"
}

// Related is a secondary position that helps explain a diagnostic: the
// first of two duplicates, one hop of a cycle.
type Related struct {
	Pos     token.Position
	Message string
}

// Diagnostic is one problem found while loading or analysing packages.
type Diagnostic struct {
	Pos, End token.Position // End may be zero
	Code     Code
	Severity Severity
	Message  string
	Related  []Related
}

// Error formats the diagnostic like [Diagnostic.String], so a diagnostic
// can travel as an error.
func (d Diagnostic) Error() string { return d.String() }

// String formats the diagnostic the way the go command prints errors:
//
//	file:line:col: message
//		file:line:col: related message
//
// Warnings carry a "warning: " prefix. Multi-line messages and related
// positions are indented with a tab.
func (d Diagnostic) String() string {
	var b strings.Builder
	if p := formatPos(d.Pos); p != "" {
		b.WriteString(p)
		b.WriteString(": ")
	}
	if d.Severity == Warning {
		b.WriteString("warning: ")
	}
	b.WriteString(strings.ReplaceAll(d.Message, "\n", "\n\t"))
	for _, r := range d.Related {
		b.WriteString("\n\t")
		if p := formatPos(r.Pos); p != "" {
			b.WriteString(p)
			b.WriteString(": ")
		}
		b.WriteString(r.Message)
	}
	return b.String()
}

func formatPos(p token.Position) string {
	switch {
	case p.Filename == "":
		return ""
	case p.Line == 0:
		return p.Filename
	case p.Column == 0:
		return fmt.Sprintf("%s:%d", p.Filename, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.Filename, p.Line, p.Column)
}

// SortDiagnostics sorts diagnostics by file, line and column, then by code
// and message, so output is the same whatever order they were found in.
func SortDiagnostics(ds []Diagnostic) {
	slices.SortStableFunc(ds, func(a, b Diagnostic) int {
		return cmp.Or(
			cmp.Compare(a.Pos.Filename, b.Pos.Filename),
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Column, b.Pos.Column),
			cmp.Compare(a.Code, b.Code),
			cmp.Compare(a.Message, b.Message),
		)
	})
}

// HasErrors reports whether any diagnostic is an error.
func HasErrors(ds []Diagnostic) bool {
	return slices.ContainsFunc(ds, func(d Diagnostic) bool { return d.Severity == Error })
}

// Print writes each diagnostic on its own line(s) and returns the first
// write error.
func Print(w io.Writer, ds []Diagnostic) error {
	for _, d := range ds {
		if _, err := fmt.Fprintln(w, d.String()); err != nil {
			return fmt.Errorf("print diagnostics: %w", err)
		}
	}
	return nil
}
