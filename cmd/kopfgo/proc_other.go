//go:build !unix

package main

import (
	"os"
	"syscall"
)

// The console's Ctrl-C reaches the operator directly: kopfgo only has to
// survive it and wait for the operator.
var forwardedSignals = []os.Signal{os.Interrupt}

func sysProcAttr() *syscall.SysProcAttr { return nil }

func forward(*os.Process, os.Signal) {}
