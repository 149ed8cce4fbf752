// Package analysis reads dagen directives from Go packages, builds the
// workflow graphs they describe and checks them statically.
//
// It is the front half of the dagen generator. [Load] loads packages with
// golang.org/x/tools/go/packages, tolerating package and type errors that sit
// in our own (possibly stale) generated file, dag_gen.go. [Analyze] then:
//
//   - finds //dag:workflow, //dag:step, //dag:sleep and //dag:onfailure
//     directives in the raw comment lists (ast.CommentGroup.Text drops
//     directive lines), tokenizing their key=value arguments with exact
//     positions so that an error points at the key it is about;
//   - resolves every name (parents, skip predicates, types) through go/types;
//   - builds one [Workflow] per //dag:workflow type and checks it: parents
//     exist and belong to the same workflow, the graph has no cycle,
//     signatures bind parent outputs by type in after= order, skip
//     predicates can be given their parameters, outputs can be stored.
//
// Problems are data: each is a [Diagnostic] with a position, a [Code] and a
// message that says how to fix it where that is obvious. Analyze collects
// all of them, sorted by position, instead of stopping at the first; a
// package with an error yields no [Package], so nothing is generated from a
// graph known to be wrong.
//
// The checked graph ([Package], [Workflow], [Step]) is what package gen
// turns into code and what `dagen graph` draws.
package analysis
