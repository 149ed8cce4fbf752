package gen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dagenhq/dagen/internal/analysis"
)

// Config says where and how packages are loaded.
type Config = analysis.Config

// Diagnostic is a problem found while loading, analysing or generating.
type Diagnostic = analysis.Diagnostic

// File is a generated file: where it goes and what it holds.
type File struct {
	Path string // absolute path of dag_gen.go in the package directory
	// Content is the file's new content, or nil when the file is to be
	// deleted: its package no longer has workflows (analysis.Package.Orphan).
	Content []byte
}

// Generate loads the packages matching patterns (default "."), checks their
// workflows and returns a dag_gen.go for every package that has workflows
// and no errors, and a deletion (nil Content) for every dag_gen.go left in
// a package whose directives are all gone. It writes nothing. Diagnostics
// are sorted by position; a package with an error gets no file, the others
// still do.
func Generate(ctx context.Context, cfg Config, patterns ...string) ([]File, []Diagnostic) {
	pkgs, diags := analysis.Run(ctx, cfg, patterns...)
	files, more := Emit(pkgs)
	diags = append(diags, more...)
	analysis.SortDiagnostics(diags)
	return files, diags
}

// Emit generates the files of analysed packages.
func Emit(pkgs []*analysis.Package) ([]File, []Diagnostic) {
	var files []File
	var diags []Diagnostic
	for _, p := range pkgs {
		if p.Orphan {
			files = append(files, File{Path: filepath.Join(p.Dir, analysis.GeneratedFile)})
			continue
		}
		src, err := emitPackage(p)
		if err != nil {
			diags = append(diags, Diagnostic{Code: analysis.Internal, Message: fmt.Sprintf("generate %s: %v", p.Path, err)})
			continue
		}
		files = append(files, File{Path: filepath.Join(p.Dir, analysis.GeneratedFile), Content: src})
	}
	return files, diags
}

// Write writes the files whose content differs from what is on disk,
// deletes those with nil Content, and returns the paths it changed.
func Write(files []File) ([]string, error) {
	var wrote []string
	for _, f := range files {
		if f.Content == nil {
			err := os.Remove(f.Path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return wrote, fmt.Errorf("remove %s: %w", f.Path, err)
			}
			wrote = append(wrote, f.Path)
			continue
		}
		old, err := os.ReadFile(f.Path)
		if err == nil && bytes.Equal(old, f.Content) {
			continue
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return wrote, fmt.Errorf("read %s: %w", f.Path, err)
		}
		if err := os.WriteFile(f.Path, f.Content, 0o644); err != nil {
			return wrote, fmt.Errorf("write %s: %w", f.Path, err)
		}
		wrote = append(wrote, f.Path)
	}
	return wrote, nil
}
