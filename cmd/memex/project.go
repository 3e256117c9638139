package main

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/memex-dev/memex/core"
)

// resolveProject returns the project id and how it was found: the
// configured one (flag, env or file), else the git remote origin as
// host/owner/repo, else the git root path, else the working directory —
// always sanitised with core.SanitizeProjectID.
func resolveProject(cfg Config, cwd string) (id, from string) {
	if cfg.Project != "" {
		return core.SanitizeProjectID(cfg.Project), "config"
	}
	if remote := gitOutput(cwd, "remote", "get-url", "origin"); remote != "" {
		if p := remoteProject(remote); p != "" {
			return core.SanitizeProjectID(p), "git remote"
		}
	}
	if root := gitRoot(cwd); root != "" {
		return core.SanitizeProjectID(root), "git root"
	}
	return core.SanitizeProjectID(cwd), "working directory"
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

// gitRoot is the top of the git work tree containing dir, or "".
func gitRoot(dir string) string {
	if dir == "" {
		return ""
	}
	if out := gitOutput(dir, "rev-parse", "--show-toplevel"); out != "" {
		return filepath.Clean(out)
	}
	return ""
}

// gitOutput runs git in dir and returns its trimmed output, "" on any error
// (git missing, not a repository, no such remote).
func gitOutput(dir string, args ...string) string {
	if _, err := os.Stat(dir); err != nil {
		return ""
	}
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
