package gen_test

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/dagenhq/dagen/gen"
	"github.com/dagenhq/dagen/internal/analysis"
)

// Generate is pure: it returns the files and the diagnostics, and writing
// them is up to the caller (gen.Write, or gen.Diff to compare).
func ExampleGenerate() {
	files, diags := gen.Generate(context.Background(), gen.Config{}, "../examples/order")
	for _, d := range diags {
		fmt.Println(d)
	}
	for _, f := range files {
		fmt.Println(filepath.Base(filepath.Dir(f.Path)), filepath.Base(f.Path))
	}
	diffs, err := gen.Diff(files)
	fmt.Println("stale:", len(diffs), err)
	// Output:
	// order dag_gen.go
	// stale: 0 <nil>
}

// Mermaid draws a checked workflow; `dagen graph` prints the same.
func ExampleMermaid() {
	pkgs, _ := analysis.Run(context.Background(), analysis.Config{}, "./testdata/basic")
	fmt.Print(gen.Mermaid(pkgs[0].Workflows[0]))
	// Output:
	// ---
	// title: Greeting
	// ---
	// flowchart TD
	//     Upper["Upper"]
	//     Greet["Greet"]
	//     Upper --> Greet
}
