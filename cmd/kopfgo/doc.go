// Command kopfgo is the command line of kopfgo, as `kopf` is Kopf's:
//
//	kopfgo run PATH... [flags]   build the operator in PATH and run it
//	kopfgo build PATH... -o BIN  build it into a static binary, for images
//	kopfgo rbac PATH... [flags]  print the least-privilege RBAC its handlers need
//	kopfgo inspect RESOURCE      show objects' handling state, no operator needed
//	kopfgo version               print the versions of kopfgo and Go
//
// `kopfgo run ./handlers -n default` works like `kopf run handlers.py -n
// default`: the PATHs are Go packages (directories, import paths or
// patterns such as ./...) that register handlers in init() on the default
// operator with kopfgo.On. kopfgo builds them, within their own module,
// together with a generated main package that imports them and calls
// kopfgo.Main(), then runs the binary with the flags. A single PATH that is
// itself a main package (which must call kopfgo.Main()) is built as it is.
//
// The generated main is never written into the user's module: `go build
// -overlay` adds it as a virtual file in a directory that does not exist,
// _kopfgo_run at the module root, where it may import the module's internal
// packages. The binary goes to a temporary directory, removed when the
// operator exits; go's build cache makes the next build fast.
//
// The flags are those of kopfgo.Main (package internal/cli), validated
// before building so that a mistake fails fast. SIGINT and SIGTERM are
// passed on to the operator, which runs in its own process group so that a
// Ctrl-C in a terminal reaches it once, through kopfgo: the first signal
// stops it gracefully, a second one at once. kopfgo exits with the
// operator's exit code.
//
// `kopfgo build` is run's build step alone (one implementation: runner.build),
// statically linked, so that images need no Go toolchain; `kopfgo rbac`
// builds the same way and runs the operator's own `rbac` subcommand, which
// knows the registry. `kopfgo inspect`
// reads the objects' records with the kubeconfig alone (internal/inspect).
package main
