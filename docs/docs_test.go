package docs_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/dagenhq/dagen/gen"
)

// modulePath is the module the pages' import paths and commands name.
const modulePath = "github.com/dagenhq/dagen"

// tourModule is the module path of the reader's own module in the pages
// (README.md's tour: go mod init example.com/hello). Compiled blocks are
// built in a module of that path.
const tourModule = "example.com/hello"

// page is one markdown file of the documentation.
type page struct {
	rel   string // path from the repository's root, with slashes: README.md, docs/concepts.md
	lines []string
}

// block is a fenced code block of a page.
type block struct {
	page string // the page's rel
	line int    // the opening fence's line, 1-based
	info string // what follows the fence: "go", "sh", "text output"
	body string
}

func (b block) lang() string {
	if f := strings.Fields(b.info); len(f) > 0 {
		return f[0]
	}
	return ""
}

// where is "page:line", for messages.
func (b block) where() string { return fmt.Sprintf("%s:%d", b.page, b.line) }

// pkgName is the package clause a block opens with, and false for a block
// that does not: only a go block whose first line is a package clause is
// compiled; the others are fragments.
func (b block) pkgName() (string, bool) {
	if b.lang() != "go" {
		return "", false
	}
	first, _, _ := strings.Cut(strings.TrimLeft(b.body, "\n"), "\n")
	name, ok := strings.CutPrefix(first, "package ")
	if !ok {
		return "", false
	}
	name, _, _ = strings.Cut(name, " ")
	return strings.TrimSpace(name), true
}

// prose is a line of a page outside its code blocks.
type prose struct {
	line int
	text string
}

// parse splits a page into its fenced blocks and its other lines.
func parse(p page) ([]block, []prose) {
	var blocks []block
	var text []prose
	var cur *block
	var body []string
	for i, l := range p.lines {
		trimmed := strings.TrimLeft(l, " ")
		if cur == nil {
			if info, ok := strings.CutPrefix(trimmed, "```"); ok {
				cur = &block{page: p.rel, line: i + 1, info: strings.TrimSpace(info)}
				body = body[:0]
				continue
			}
			text = append(text, prose{line: i + 1, text: l})
			continue
		}
		if strings.TrimSpace(trimmed) == "```" {
			cur.body = strings.Join(body, "\n") + "\n"
			blocks = append(blocks, *cur)
			cur = nil
			continue
		}
		body = append(body, l)
	}
	return blocks, text
}

// repoRoot returns the repository's root: the test runs in docs/.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod above docs/: %v", err)
	}
	return root
}

// readPages reads README.md and every docs/*.md.
func readPages(t *testing.T, root string) []page {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	names = append([]string{filepath.Join(root, "README.md")}, names...)
	var pages []page
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, name)
		pages = append(pages, page{rel: filepath.ToSlash(rel), lines: strings.Split(string(b), "\n")})
	}
	return pages
}

// TestPathsExist checks every path a page names: the relative paths and
// package patterns in its code (`runtime/engine`, ./cmd/dagen,
// github.com/dagenhq/dagen/runtime/dag), the make targets of its commands,
// and its links, with their anchors.
func TestPathsExist(t *testing.T) {
	root := repoRoot(t)
	for _, p := range readPages(t, root) {
		for _, msg := range checkPage(root, p) {
			t.Error(msg)
		}
	}
}

// TestCheckerCatchesAMovedPackage keeps the checker honest: a command
// naming a package by the path it had before it moved fails.
func TestCheckerCatchesAMovedPackage(t *testing.T) {
	root := repoRoot(t)
	p := page{rel: "docs/x.md", lines: strings.Split("Run it:\n\n```sh\ngo test -run '^$' -bench EngineMemstore ./engine\nmake nosuchtarget\n```\n\nSee `runtime/enigne`, [the map](nowhere.md) and [a section](concepts.md#no-such-section).\n", "\n")}
	got := checkPage(root, p)
	for _, want := range []string{"./engine", "make nosuchtarget", "runtime/enigne", "nowhere.md", "#no-such-section"} {
		if !slices.ContainsFunc(got, func(m string) bool { return strings.Contains(m, want) }) {
			t.Errorf("the checker let %q through; it said:\n%s", want, strings.Join(got, "\n"))
		}
	}
}

var (
	inlineCode = regexp.MustCompile("`([^`]+)`")
	link       = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	makeTarget = regexp.MustCompile(`^make ([a-z][a-z0-9-]*)`)
)

// checkPage returns what page p says that the tree at root contradicts.
func checkPage(root string, p page) []string {
	blocks, text := parse(p)
	var msgs []string
	bad := func(line int, format string, args ...any) {
		msgs = append(msgs, fmt.Sprintf("%s:%d: %s", p.rel, line, fmt.Sprintf(format, args...)))
	}
	// code checks the paths in a line of code, and in a command (an
	// inline span or a line of a shell block) its make target.
	code := func(line int, s string, command bool) {
		for _, tok := range pathTokens(s) {
			if msg := checkPath(root, tok); msg != "" {
				bad(line, "%s", msg)
			}
		}
		if !command {
			return
		}
		if m := makeTarget.FindStringSubmatch(strings.TrimSpace(s)); m != nil && !hasMakeTarget(root, m[1]) {
			bad(line, "make %s: the Makefile has no target %s", m[1], m[1])
		}
	}
	for _, l := range text {
		for _, m := range inlineCode.FindAllStringSubmatch(l.text, -1) {
			code(l.line, m[1], true)
		}
		for _, m := range link.FindAllStringSubmatch(l.text, -1) {
			if msg := checkLink(root, p.rel, m[1]); msg != "" {
				bad(l.line, "%s", msg)
			}
		}
	}
	for _, b := range blocks {
		for i, l := range strings.Split(b.body, "\n") {
			code(b.line+1+i, l, b.lang() == "sh")
		}
	}
	return msgs
}

// pathTokens returns the words of s that may be paths: runs of the
// characters paths are made of that hold a slash, with brace lists
// ({a,b}) kept whole.
func pathTokens(s string) []string {
	var out []string
	var cur strings.Builder
	depth := 0
	flush := func() {
		if t := cur.String(); strings.Contains(t, "/") {
			out = append(out, t)
		}
		cur.Reset()
		depth = 0
	}
	for _, r := range s {
		switch {
		case r == '{':
			depth++
			cur.WriteRune(r)
		case r == '}' && depth > 0:
			depth--
			cur.WriteRune(r)
		case r == ',' && depth > 0:
			cur.WriteRune(r)
		case unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_.-/*", r):
			cur.WriteRune(r)
		default:
			flush()
		}
	}
	flush()
	return out
}

// checkPath checks one token: a path from the root (its first element a
// directory of the root), a ./ or ../ path (commands run from the root),
// or an import path in this module. Other tokens are not the tree's, and
// pass.
func checkPath(root, tok string) string {
	rel, ok := "", false
	switch {
	case tok == modulePath || strings.HasPrefix(tok, modulePath+"/"):
		rel, ok = strings.TrimPrefix(strings.TrimPrefix(tok, modulePath), "/"), true
	case strings.HasPrefix(tok, "./"), strings.HasPrefix(tok, "../"):
		rel, ok = tok, true
	default:
		first, _, _ := strings.Cut(tok, "/")
		if fi, err := os.Stat(filepath.Join(root, first)); first != "" && first != "." && first != ".." && err == nil && fi.IsDir() {
			rel, ok = tok, true
		}
	}
	if !ok || strings.Contains(rel, "*") {
		return ""
	}
	rel = strings.TrimSuffix(strings.TrimSuffix(rel, "/..."), "...")
	rel = strings.TrimRight(rel, ".,")
	for _, path := range expandBraces(rel) {
		full := filepath.Join(root, filepath.FromSlash(path))
		if r, err := filepath.Rel(root, full); err != nil || strings.HasPrefix(r, "..") {
			return fmt.Sprintf("%s names a path outside the repository", tok)
		}
		if _, err := os.Stat(full); err != nil {
			return fmt.Sprintf("%s: %s does not exist", tok, path)
		}
	}
	return ""
}

// expandBraces expands the first {a,b} of s, and so on, recursively.
func expandBraces(s string) []string {
	i := strings.IndexByte(s, '{')
	j := strings.IndexByte(s, '}')
	if i < 0 || j < i {
		return []string{s}
	}
	var out []string
	for _, alt := range strings.Split(s[i+1:j], ",") {
		out = append(out, expandBraces(s[:i]+alt+s[j+1:])...)
	}
	return out
}

// hasMakeTarget reports whether the Makefile defines target.
func hasMakeTarget(root, target string) bool {
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		return false
	}
	return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `\s*:`).Match(b)
}

// checkLink checks a link of the page at rel: a file of the repository,
// relative to the page, and the heading its #anchor names, if any.
func checkLink(root, rel, target string) string {
	if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	file, anchor, _ := strings.Cut(target, "#")
	path := rel
	if file != "" {
		path = filepath.ToSlash(filepath.Join(filepath.Dir(rel), file))
		if strings.HasPrefix(path, "../") {
			return fmt.Sprintf("link %s leaves the repository", target)
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(path))); err != nil {
			return fmt.Sprintf("link %s: %s does not exist", target, path)
		}
	}
	if anchor == "" || !strings.HasSuffix(path, ".md") {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
	if err != nil {
		return fmt.Sprintf("link %s: %v", target, err)
	}
	if !slices.Contains(anchors(page{rel: path, lines: strings.Split(string(b), "\n")}), anchor) {
		return fmt.Sprintf("link %s: %s has no heading #%s", target, path, anchor)
	}
	return ""
}

// anchors returns the anchors of a page's headings, as GitHub makes them:
// lower case, punctuation dropped, spaces to hyphens, a suffix -1, -2 for
// repeats.
func anchors(p page) []string {
	_, text := parse(p)
	var out []string
	seen := map[string]int{}
	for _, l := range text {
		h := strings.TrimLeft(l.text, "#")
		if len(h) == len(l.text) || !strings.HasPrefix(h, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(h)) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", a, n))
		} else {
			out = append(out, a)
		}
		seen[a]++
	}
	return out
}

// TestCodeBlocksBuild builds the Go code blocks of the pages that start
// with a package clause, as a reader who pastes them would: in a module of
// its own (example.com/hello, the tour's) that requires this repository
// through a replace directive. A block of package P goes to directory P
// (P_test to P's directory, as a test file), a block of package main to a
// directory of its own. dagen generates the workflow packages, then go vet
// checks every package, go test runs the test blocks, and each main block
// followed by a "text output" block runs, on the in-memory store, and must
// print it.
//
// The module's go.mod copies this repository's requirements and go.sum,
// and the go command runs with GOPROXY=off and -mod=readonly: the build
// uses the module cache this repository's own build filled, and never the
// network.
func TestCodeBlocksBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the pages' code with the go command")
	}
	root := repoRoot(t)
	dir := t.TempDir()
	var all []block
	for _, p := range readPages(t, root) {
		blocks, _ := parse(p)
		all = append(all, blocks...)
	}

	files := map[string]block{} // file in the module → the block it holds
	var genDirs, mains []string
	var tests bool
	mainOf := map[string]block{}   // directory of a main package → its block
	outputOf := map[string]block{} // directory of a main package → the output it must print
	var lastMain string
	for i, b := range all {
		if b.info == "text output" && lastMain != "" && all[i-1].page == b.page {
			outputOf[lastMain] = b
			lastMain = ""
			continue
		}
		name, ok := b.pkgName()
		if !ok {
			continue
		}
		stem := strings.NewReplacer("/", "_", ".", "_").Replace(strings.TrimSuffix(b.page, ".md"))
		var file string
		switch {
		case name == "main":
			d := fmt.Sprintf("cmd/%s_%d", stem, b.line)
			file = d + "/main.go"
			mains = append(mains, d)
			mainOf[d] = b
			lastMain = d
		case strings.HasSuffix(name, "_test"):
			file = fmt.Sprintf("%s/%s_%d_test.go", strings.TrimSuffix(name, "_test"), stem, b.line)
			tests = true
		default:
			file = fmt.Sprintf("%s/%s_%d.go", name, stem, b.line)
			if !slices.Contains(genDirs, "./"+name) {
				genDirs = append(genDirs, "./"+name)
			}
		}
		files[file] = b
	}
	if len(files) == 0 {
		t.Fatal("no page has a Go block that starts with a package clause")
	}
	var legend []string
	for file, b := range files {
		path := filepath.Join(dir, filepath.FromSlash(file))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.body), 0o644); err != nil {
			t.Fatal(err)
		}
		legend = append(legend, fmt.Sprintf("\t%s is the block at %s", file, b.where()))
	}
	slices.Sort(legend)
	writeModule(t, root, dir)
	env := goEnv()

	fail := func(what string, out []byte, err error) {
		t.Helper()
		t.Fatalf("%s: %v\n%s\nthe files:\n%s", what, err, out, strings.Join(legend, "\n"))
	}
	if len(genDirs) > 0 {
		generated, diags := gen.Generate(t.Context(), gen.Config{Dir: dir, Env: env}, genDirs...)
		if len(diags) > 0 {
			var lines []string
			for _, d := range diags {
				lines = append(lines, d.String())
			}
			fail("dagen "+strings.Join(genDirs, " "), []byte(strings.Join(lines, "\n")), fmt.Errorf("%d diagnostics", len(diags)))
		}
		if _, err := gen.Write(generated); err != nil {
			t.Fatal(err)
		}
	}
	goCmd := func(ctx context.Context, args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		cmd.Env = env
		return cmd.CombinedOutput()
	}
	if out, err := goCmd(t.Context(), "vet", "./..."); err != nil {
		fail("go vet", out, err)
	}
	if tests {
		if out, err := goCmd(t.Context(), "test", "-count=1", "./..."); err != nil {
			fail("go test", out, err)
		}
	}
	for _, d := range mains {
		want, ok := outputOf[d]
		if !ok {
			continue
		}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "go", "run", "./"+d)
		cmd.Dir = dir
		cmd.Env = env
		out, err := cmd.Output()
		cancel()
		if err != nil {
			fail("go run ./"+d+" (the block at "+mainOf[d].where()+")", out, err)
		}
		if got, w := strings.TrimSpace(string(out)), strings.TrimSpace(want.body); got != w {
			t.Errorf("the block at %s prints\n%s\nbut the page shows (at %s)\n%s", mainOf[d].where(), got, want.where(), w)
		}
	}
}

// writeModule writes go.mod and go.sum of the reader's module in dir: this
// repository's requirements, and the repository itself by a replace.
func writeModule(t *testing.T, root, dir string) {
	t.Helper()
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "module %s\n\ngo 1.26.0\n\nrequire %s v0.0.0-00010101000000-000000000000\n\n", tourModule, modulePath)
	in := false
	for l := range strings.SplitSeq(string(mod), "\n") {
		switch {
		case strings.HasPrefix(l, "require ("):
			in = true
			b.WriteString(l + "\n")
		case in:
			b.WriteString(l + "\n")
			in = strings.TrimSpace(l) != ")"
		case strings.HasPrefix(l, "require "):
			b.WriteString(l + "\n")
		}
	}
	fmt.Fprintf(&b, "\nreplace %s => %s\n", modulePath, root)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
}

// goEnv is the environment of the go command for the reader's module: no
// network, no go.mod changes, no workspace, this toolchain, and no
// DATABASE_URL, so that the programs run in memory.
func goEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOFLAGS", "GOPROXY", "GOWORK", "GOTOOLCHAIN", "GOSUMDB", "DATABASE_URL":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GOFLAGS=-mod=readonly", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local", "GOSUMDB=off")
}
