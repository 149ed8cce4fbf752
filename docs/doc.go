// Package docs holds dagen's user documentation: README.md at the root of
// the repository and the pages of this directory. It has no code. Its test
// keeps the pages true to the tree: every path, package and make target
// they name exists, every link and anchor resolves, and the Go code blocks
// that start with a package clause build, pass go vet and, where the page
// shows their output or tests, run as the page says.
package docs
