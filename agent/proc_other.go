//go:build !unix

package agent

import (
	"os"
	"os/exec"
)

func setGroup(*exec.Cmd) {}

// signalGroup kills the process: without process groups there is no
// graceful stop to ask for.
func signalGroup(cmd *exec.Cmd, _ bool) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

func exitCode(ps *os.ProcessState) int {
	if c := ps.ExitCode(); c >= 0 {
		return c
	}
	return 128 + 9
}
