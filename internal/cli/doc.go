// Package cli holds the command line shared by kopfgo.Main (a user's own
// operator binary) and the kopfgo command (`kopfgo run PATH...`): the flags
// of Kopf's `run` that apply to kopfgo (compat: cli-flags), their KOPF_RUN_*
// environment variables (compat: cli-flags), their validation, the exit codes, and the
// handling of SIGINT/SIGTERM.
//
// It exists so that both commands accept exactly the same flags: `kopfgo
// run` validates them before it spends time building the operator, then
// passes them on to the built binary, which parses them again with the same
// definitions. It does not import the root package, so the kopfgo command
// stays independent of the framework it builds.
package cli
