// Command etcd is the upstream etcd server, built from the Go module proxy so
// that kopfgo's tests need no downloaded foreign binaries.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
