//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// openPTY opens a pseudo-terminal: the master to read, the terminal to
// write to.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlockpt: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("ptsname: %v", e)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return m, s
}

// On a terminal, memex run shows a spinner while the agent is silent, and
// clears it; --quiet shows none. (The two runs wait on a silent agent
// side by side.)
func TestRunSpinnerOnTerminal(t *testing.T) {
	for _, quiet := range []bool{false, true} {
		t.Run(fmt.Sprintf("quiet=%t", quiet), func(t *testing.T) {
			t.Parallel()
			runSpinnerOnTerminal(t, quiet)
		})
	}
}

func runSpinnerOnTerminal(t *testing.T, quiet bool) {
	c := newCLI(t)
	agent := filepath.Join(c.dir, "silent.sh")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\ncat >/dev/null\nsleep 2.6\necho done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	master, tty := openPTY(t)
	var seen bytes.Buffer
	read := make(chan struct{})
	go func() { _, _ = io.Copy(&seen, master); close(read) }()
	args := []string{"run", "--no-memory", "--backend", agent, "--store", c.store, "--project", "test", "a silent task"}
	if quiet {
		args = append(args, "--quiet")
	}
	a := &app{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: tty,
		getenv: func(k string) string { return c.env[k] }, getwd: func() (string, error) { return c.cwd, nil }, registry: defaultRegistry()}
	if code := a.main(context.Background(), args); code != 0 {
		t.Fatalf("memex run: exit %d", code)
	}
	_ = tty.Close()
	<-read // the master reads EIO once the terminal is closed
	drawn := strings.Contains(seen.String(), "the agent is working")
	if drawn == quiet {
		t.Errorf("quiet=%t: spinner drawn %t; terminal saw %q", quiet, drawn, seen.String())
	}
}
