package main

import (
	"cmp"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/memex-dev/memex/core"
)

// resolveProject returns the project id and where it came from: the
// configured one (--project, MEMEX_PROJECT or a config file, named), else
// the git remote origin as host/owner/repo, else the git root path, else
// the working directory — always sanitised with core.SanitizeProjectID.
func resolveProject(cfg Config, cwd string) (id, from string) {
	if cfg.Project != "" {
		return core.SanitizeProjectID(cfg.Project), cmp.Or(cfg.ProjectFrom, "config")
	}
	if remote := gitRemoteOrigin(cwd); remote != "" {
		if p := remoteProject(remote); p != "" {
			return core.SanitizeProjectID(p), "git remote origin"
		}
	}
	if root := gitRoot(cwd); root != "" {
		return core.SanitizeProjectID(root), "git root " + root
	}
	return core.SanitizeProjectID(cwd), "working directory " + cwd
}

// remoteProject turns a git remote URL into host/owner/repo: scp-like
// (git@host:owner/repo.git), ssh://, https:// (credentials and port
// dropped), with the .git suffix and trailing slashes stripped.
func remoteProject(remote string) string {
	remote = strings.TrimSpace(remote)
	var host, path string
	if strings.Contains(remote, "://") {
		u, err := url.Parse(remote)
		if err != nil {
			return ""
		}
		host, path = u.Hostname(), u.Path
	} else if i := strings.Index(remote, ":"); i > 0 && !strings.Contains(remote[:i], "/") {
		host, path = remote[:i], remote[i+1:]
		if at := strings.LastIndex(host, "@"); at >= 0 {
			host = host[at+1:]
		}
	} else {
		// A local path remote: use it as is.
		path = remote
	}
	path = strings.Trim(path, "/")
	path = strings.TrimSuffix(path, ".git")
	path = strings.Trim(path, "/")
	if host == "" {
		return path
	}
	if path == "" {
		return host
	}
	return strings.ToLower(host) + "/" + path
}

// gitRoot is the top of the git work tree containing dir, or "": the
// nearest directory upwards that holds a .git directory or file. It reads
// the file system only (no git subprocess on every command).
func gitRoot(dir string) string {
	root, _ := findGit(dir)
	return root
}

// findGit walks up from dir to the work tree holding .git and returns it
// with the git directory (resolving a "gitdir: …" file of worktrees and
// submodules).
func findGit(dir string) (root, gitDir string) {
	if dir == "" {
		return "", ""
	}
	d := filepath.Clean(dir)
	for {
		p := filepath.Join(d, ".git")
		if fi, err := os.Stat(p); err == nil {
			if fi.IsDir() {
				return d, p
			}
			if b, err := os.ReadFile(p); err == nil {
				if g, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:"); ok {
					g = strings.TrimSpace(g)
					if !filepath.IsAbs(g) {
						g = filepath.Join(d, g)
					}
					return d, filepath.Clean(g)
				}
			}
			return d, ""
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", ""
		}
		d = parent
	}
}

// gitRemoteOrigin reads the url of remote "origin" from the repository's
// config file (for a worktree, the common directory's), or "".
func gitRemoteOrigin(dir string) string {
	_, gitDir := findGit(dir)
	if gitDir == "" {
		return ""
	}
	cfgDir := gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		cfgDir = c
	}
	b, err := os.ReadFile(filepath.Join(cfgDir, "config"))
	if err != nil {
		return ""
	}
	return originURL(string(b))
}

// originURL extracts remote.origin.url from a git config file's text.
func originURL(text string) string {
	in := false
	for _, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			h := strings.ToLower(strings.Join(strings.Fields(strings.Trim(line, "[]")), " "))
			in = h == `remote "origin"`
			continue
		}
		if !in {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "url") {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	return ""
}
