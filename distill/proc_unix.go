//go:build unix

package distill

import (
	"os/exec"
	"syscall"
)

// setGroup runs the distiller in its own process group and makes a
// timeout kill the whole group (a CLI's children included).
func setGroup(c *exec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
}
