// Package atomicfile replaces a file's content atomically: the new bytes go
// to a temporary file in the same directory, which is synced and renamed
// over the target, so a reader — or a crash at any moment — sees either the
// old file or the new one, never a torn mix. The target's permissions are
// kept, a missing directory is created, and a symbolic link is followed (the
// file it points to is replaced; the link stays a link).
package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Options tune Write. The zero value is ready to use.
type Options struct {
	// Perm is the mode of a file that does not exist yet (0: 0644). An
	// existing file keeps its own mode.
	Perm fs.FileMode
	// DirPerm is the mode of directories Write creates (0: 0755).
	DirPerm fs.FileMode
	// BeforeRename, when set, runs after the temporary file is written and
	// synced and before it is renamed over the target (tests use it to
	// kill the process at the worst moment).
	BeforeRename func(tmp string)
}

// Write replaces path's content with data (see the package doc). When the
// file already holds exactly data, nothing is written and changed is false.
func Write(path string, data []byte, opt Options) (changed bool, err error) {
	if opt.Perm == 0 {
		opt.Perm = 0o644
	}
	if opt.DirPerm == 0 {
		opt.DirPerm = 0o755
	}
	target, err := resolve(path)
	if err != nil {
		return false, err
	}
	perm := opt.Perm
	switch st, err := os.Stat(target); {
	case err == nil:
		if !st.Mode().IsRegular() {
			return false, fmt.Errorf("%s: not a regular file", path)
		}
		perm = st.Mode().Perm()
		if old, err := os.ReadFile(target); err == nil && bytes.Equal(old, data) {
			return false, nil
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		return false, err
	}
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, opt.DirPerm); err != nil {
		return false, err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".tmp-*")
	if err != nil {
		return false, err
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return false, err
	}
	if err := tmp.Chmod(perm); err != nil {
		return false, err
	}
	if err := tmp.Sync(); err != nil {
		return false, err
	}
	if err := tmp.Close(); err != nil {
		return false, err
	}
	if opt.BeforeRename != nil {
		opt.BeforeRename(tmp.Name())
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return false, err
	}
	done = true
	syncDir(dir)
	return true, nil
}

// resolve follows symbolic links to the file they name (which may not
// exist yet).
func resolve(path string) (string, error) {
	for range 40 {
		st, err := os.Lstat(path)
		if err != nil || st.Mode()&fs.ModeSymlink == 0 {
			return path, nil
		}
		dest, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(path), dest)
		}
		path = dest
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}

// syncDir makes the rename durable where the platform allows it.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
