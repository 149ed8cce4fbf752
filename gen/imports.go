package gen

import (
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
)

// groupImports rewrites the import block of formatted Go source into two
// groups, the standard library first, the way goimports lays it out.
// jennifer writes one sorted block. Only the import block is re-parsed and
// replaced; the rest of the file, already gofmt'ed, is left as is, which
// matters for big files.
func groupImports(src []byte) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ImportsOnly)
	if err != nil {
		return nil, fmt.Errorf("parse generated imports: %w", err)
	}
	if len(f.Decls) != 1 || len(f.Imports) < 2 {
		return src, nil
	}
	decl := f.Decls[0]
	var std, other []string
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return nil, fmt.Errorf("generated import %s: %w", imp.Path.Value, err)
		}
		line := "\t" + imp.Path.Value
		if imp.Name != nil {
			line = "\t" + imp.Name.Name + " " + imp.Path.Value
		}
		if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
			other = append(other, line)
		} else {
			std = append(std, line)
		}
	}
	byPath := func(a, b string) int { return strings.Compare(importPath(a), importPath(b)) }
	slices.SortFunc(std, byPath)
	slices.SortFunc(other, byPath)
	var block bytes.Buffer
	block.WriteString("import (\n")
	for i, group := range [][]string{std, other} {
		if len(group) == 0 {
			continue
		}
		if i > 0 && len(std) > 0 {
			block.WriteString("\n")
		}
		block.WriteString(strings.Join(group, "\n") + "\n")
	}
	block.WriteString(")")
	start, end := fset.Position(decl.Pos()).Offset, fset.Position(decl.End()).Offset
	out := make([]byte, 0, len(src)+8)
	out = append(out, src[:start]...)
	out = append(out, block.Bytes()...)
	return append(out, src[end:]...), nil
}

// importPath returns the quoted path of an import line.
func importPath(line string) string {
	return line[strings.IndexByte(line, '"'):]
}
