package atomicfile

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The helper process: run by the kill tests as a child that writes and is
// killed (go test runs it as TestHelperWriter with the env set).
func TestHelperWriter(t *testing.T) {
	path := os.Getenv("ATOMICFILE_HELPER_PATH")
	if path == "" {
		t.Skip("helper process for the kill tests")
	}
	size, _ := strconv.Atoi(os.Getenv("ATOMICFILE_HELPER_SIZE"))
	fill := os.Getenv("ATOMICFILE_HELPER_FILL")
	data := bytes.Repeat([]byte(fill), size)
	opt := Options{}
	if os.Getenv("ATOMICFILE_HELPER_PAUSE") == "1" {
		opt.BeforeRename = func(string) {
			fmt.Println("ready")
			time.Sleep(time.Minute) // the parent kills us here
		}
	}
	fmt.Println("writing")
	if _, err := Write(path, data, opt); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("done")
	os.Exit(0)
}

func helper(t *testing.T, path string, size int, fill string, pause bool) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ATOMICFILE_HELPER_PATH="+path, "ATOMICFILE_HELPER_SIZE="+strconv.Itoa(size),
		"ATOMICFILE_HELPER_FILL="+fill)
	if pause {
		cmd.Env = append(cmd.Env, "ATOMICFILE_HELPER_PAUSE=1")
	}
	return cmd
}

// A kill between the write of the temporary file and the rename leaves the
// old file intact.
func TestKillBetweenWriteAndRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "CLAUDE.md")
	old := []byte("# old\nkeep me\n")
	if err := os.WriteFile(path, old, 0o640); err != nil {
		t.Fatal(err)
	}
	cmd := helper(t, path, 1<<20, "n", true)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(out)
	_, _ = br.ReadString('\n') // "writing"
	line, _ := br.ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		_ = cmd.Process.Kill()
		t.Fatalf("helper said %q", line)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, old) {
		t.Fatalf("after a kill before the rename the file is %d bytes, want the old %d", len(got), len(old))
	}
	// The next write succeeds and leaves no stray temporary file of its own.
	if _, err := Write(path, []byte("new\n"), Options{}); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640 kept", st.Mode().Perm())
	}
}

// Property: a writer killed at a random moment leaves exactly the old or
// exactly the new content (100 cases, seeded; four files at a time).
func TestKillAtRandomMomentNeverTears(t *testing.T) {
	dir := t.TempDir()
	for w := range 4 {
		t.Run(fmt.Sprint("file", w), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(18, uint64(w)))
			path := filepath.Join(dir, fmt.Sprint("sub", w), "AGENTS.md")
			cur := []byte("start\n")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, cur, 0o644); err != nil {
				t.Fatal(err)
			}
			sawOld, sawNew := 0, 0
			for i := range 25 {
				fill := string(rune('a' + i%26))
				size := 1 + rng.IntN(256<<10)
				want := bytes.Repeat([]byte(fill), size)
				cmd := helper(t, path, size, fill, false)
				out, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				_, _ = bufio.NewReader(out).ReadString('\n') // "writing": Write starts now
				time.Sleep(time.Duration(rng.IntN(4_000)) * time.Microsecond)
				_ = cmd.Process.Signal(syscall.SIGKILL)
				_ = cmd.Wait()
				got, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case bytes.Equal(got, cur):
					sawOld++
				case bytes.Equal(got, want):
					sawNew++
					cur = want
				default:
					t.Fatalf("case %d: torn file: %d bytes, old %d, new %d", i, len(got), len(cur), len(want))
				}
			}
			t.Logf("old kept %d times, new written %d times", sawOld, sawNew)
		})
	}
}

// Property: a missing directory (any depth) is created, the content is
// written, a second identical write changes nothing (100 cases).
func TestMissingDirectoryCreatedAndIdempotent(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 18))
	root := t.TempDir()
	for i := range 100 {
		parts := []string{root, fmt.Sprintf("c%d", i)}
		for range rng.IntN(4) {
			parts = append(parts, fmt.Sprintf("d%d", rng.IntN(1000)))
		}
		path := filepath.Join(append(parts, "GEMINI.md")...)
		data := []byte(strings.Repeat("x", rng.IntN(200)) + "\n")
		changed, err := Write(path, data, Options{})
		if err != nil || !changed {
			t.Fatalf("case %d: changed %v err %v", i, changed, err)
		}
		got, _ := os.ReadFile(path)
		if !bytes.Equal(got, data) {
			t.Fatalf("case %d: content differs", i)
		}
		st, _ := os.Stat(path)
		mtime := st.ModTime()
		changed, err = Write(path, data, Options{})
		if err != nil || changed {
			t.Fatalf("case %d: second write: changed %v err %v", i, changed, err)
		}
		if st2, _ := os.Stat(path); !st2.ModTime().Equal(mtime) {
			t.Fatalf("case %d: an identical write touched the file", i)
		}
	}
}

func TestSymlinkFollowedAndModeKept(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "AGENTS.md")
	link := filepath.Join(dir, "CLAUDE.md")
	if err := os.WriteFile(real, []byte("a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("AGENTS.md", link); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(link, []byte("b\n"), Options{}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced by a file")
	}
	got, _ := os.ReadFile(real)
	st, _ := os.Stat(real)
	if string(got) != "b\n" || st.Mode().Perm() != 0o600 {
		t.Fatalf("target %q mode %v", got, st.Mode().Perm())
	}
	if _, err := Write(dir, []byte("x"), Options{}); err == nil {
		t.Error("writing over a directory succeeded")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}
