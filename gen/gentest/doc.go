// Package gentest helps test code generation end to end: it creates
// throwaway Go modules that use this repository's dagen through a replace
// directive, so a test can generate, build and run real packages outside
// the repository without touching it.
package gentest
