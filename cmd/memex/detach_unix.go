//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// detach puts c in a session of its own, so it outlives memex and no
// terminal signal (Ctrl-C) reaches it.
func detach(c *exec.Cmd) { c.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
