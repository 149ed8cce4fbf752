// Package cli is the dagen command: argument parsing, exit codes and
// output. It is a thin layer over package gen, which does the work, so
// that the command can be tested without building a binary.
package cli
