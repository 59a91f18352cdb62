// Command chaos-operator is the chaos run's operator as a binary of its own
// (kopfgo.Main with the chaos package's handlers), built once and restarted
// many times without a rebuild.
package main

import (
	"github.com/kopfgo/kopfgo"
	_ "github.com/kopfgo/kopfgo/e2e/operators/chaos"
)

func main() { kopfgo.Main() }
