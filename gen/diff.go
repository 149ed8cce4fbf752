package gen

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// FileDiff describes a generated file that is not what is on disk.
type FileDiff struct {
	Path string
	// Text is a unified diff from the file on disk to the generated one.
	Text string
}

// Diff compares generated files with the files on disk and returns those
// that differ, are missing, or are still there although they are to be
// deleted, in order.
func Diff(files []File) ([]FileDiff, error) {
	var out []FileDiff
	for _, f := range files {
		old, err := os.ReadFile(f.Path)
		missing := errors.Is(err, fs.ErrNotExist)
		if err != nil && !missing {
			return out, fmt.Errorf("read %s: %w", f.Path, err)
		}
		if f.Content == nil && missing || f.Content != nil && string(old) == string(f.Content) {
			continue
		}
		label := "(generated)"
		if f.Content == nil {
			label = "(to be deleted: no workflows left)"
		}
		out = append(out, FileDiff{Path: f.Path, Text: unified(f.Path, label, string(old), string(f.Content))})
	}
	return out, nil
}

// unified renders a one-hunk unified diff: the lines between the longest
// common prefix and suffix, with up to three lines of context. That is
// exact (applying it gives the new text) without needing a full diff
// algorithm, and generated files rarely change in more than one place.
func unified(path, label, a, b string) string {
	al, bl := splitLines(a), splitLines(b)
	pre := 0
	for pre < len(al) && pre < len(bl) && al[pre] == bl[pre] {
		pre++
	}
	suf := 0
	for suf < len(al)-pre && suf < len(bl)-pre && al[len(al)-1-suf] == bl[len(bl)-1-suf] {
		suf++
	}
	const ctx = 3
	start := max(0, pre-ctx)
	aEnd := min(len(al), len(al)-suf+ctx)
	bEnd := min(len(bl), len(bl)-suf+ctx)
	var s strings.Builder
	fmt.Fprintf(&s, "--- %s (on disk)\n+++ %s %s\n", path, path, label)
	fmt.Fprintf(&s, "@@ -%s +%s @@\n", hunkRange(start, aEnd-start), hunkRange(start, bEnd-start))
	for _, l := range al[start:pre] {
		s.WriteString(" " + l + "\n")
	}
	for _, l := range al[pre : len(al)-suf] {
		s.WriteString("-" + l + "\n")
	}
	for _, l := range bl[pre : len(bl)-suf] {
		s.WriteString("+" + l + "\n")
	}
	for _, l := range al[len(al)-suf : aEnd] {
		s.WriteString(" " + l + "\n")
	}
	return s.String()
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
