// Package version says which build a binary is: the kopfgo CLI's for
// `kopfgo version`, an operator's for its own `version` command and for the
// labels of the image `kopfgo build --image` makes.
//
// Two sources, in this order: the stamp that `kopfgo build` links in with
// -ldflags -X (the --version flag, and the commit of the module's checkout),
// which survives builds where the go command records no VCS information
// (GOFLAGS=-buildvcs=false, a source tree copied into a docker build without
// its .git); then what the go command records in every binary
// (runtime/debug.ReadBuildInfo: the main module's version, vcs.revision and
// vcs.modified). Without either a build is "(devel)", as the go command says.
package version
