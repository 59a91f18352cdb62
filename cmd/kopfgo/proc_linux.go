package main

import "syscall"

// setParentDeathSignal stops the operator if kopfgo is killed: outside the
// terminal's process group, nothing else would.
func setParentDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGTERM }
