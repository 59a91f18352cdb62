//go:build unix

package main

import (
	"os"
	"syscall"
)

// The signals passed on to the operator.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// sysProcAttr runs the operator in its own process group, so that a Ctrl-C
// in a terminal reaches it once, passed on by kopfgo, rather than twice
// (from the terminal and from kopfgo), which would stop it at once.
func sysProcAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(attr)
	return attr
}

func forward(p *os.Process, s os.Signal) { _ = p.Signal(s) }
