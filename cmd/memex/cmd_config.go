package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"
)

const configExamples = `  memex config trust              # trust this repository's .memex.toml as it is now
  memex config trust path/to/.memex.toml
  memex config untrust            # stop trusting it
  memex config list               # the trusted files (a changed file is no longer trusted)`

// cmdConfig is memex config trust|untrust|list: which repository config
// files may set the keys that run commands or choose where data goes
// (repotrust.go).
func cmdConfig(_ context.Context, a *app, args []string) error {
	fs, _ := a.newFlagSet("config", "config trust|untrust [FILE] | config list", configExamples)
	pos, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("config: want one of: trust, untrust, list")
	}
	switch pos[0] {
	case "list":
		if len(pos) > 1 {
			return usagef("config list: unexpected argument %q", pos[1])
		}
		es, err := readTrust(a.getenv)
		if err != nil {
			return err
		}
		for _, e := range es {
			state := "trusted"
			if b, err := os.ReadFile(e.path); err != nil {
				state = "missing"
			} else if contentHash(b) != e.hash {
				state = "changed since trusted: not trusted"
			}
			fmt.Fprintf(a.stdout, "%s\t%s\n", e.path, state)
		}
		return nil
	case "trust", "untrust":
		if len(pos) > 2 {
			return usagef("config %s: at most one FILE", pos[0])
		}
		path, err := a.repoConfigPath(pos[1:])
		if err != nil {
			return err
		}
		es, err := readTrust(a.getenv)
		if err != nil {
			return err
		}
		kept := es[:0]
		for _, e := range es {
			if e.path != path {
				kept = append(kept, e)
			}
		}
		if pos[0] == "untrust" {
			if len(kept) == len(es) {
				fmt.Fprintf(a.stdout, "%s was not trusted\n", path)
				return nil
			}
			if err := writeTrust(a.getenv, kept); err != nil {
				return fmt.Errorf("config untrust: %w", err)
			}
			fmt.Fprintf(a.stdout, "no longer trusted: %s\n", path)
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("config trust: %w", err)
		}
		var fc fileConfig
		md, err := toml.Decode(string(b), &fc)
		if err != nil {
			return fmt.Errorf("config trust: %s is not valid TOML: %w", path, err)
		}
		if err := writeTrust(a.getenv, append(kept, trustEntry{hash: contentHash(b), path: path})); err != nil {
			return fmt.Errorf("config trust: %w", err)
		}
		fmt.Fprintf(a.stdout, "trusted %s (%s)\n", path, contentHash(b))
		if keys := unsafeRepoKeys(md); len(keys) > 0 {
			fmt.Fprintf(a.stdout, "it may now set: %v\n", keys)
		}
		fmt.Fprintln(a.stdout, "any change to the file voids the trust; run 'memex config trust' again after reading it")
		return nil
	}
	return usagef("config: unknown subcommand %q (want trust, untrust or list)", pos[0])
}

// repoConfigPath is FILE made absolute, else the .memex.toml at the root of
// the current git repository.
func (a *app) repoConfigPath(args []string) (string, error) {
	if len(args) == 1 {
		p, err := filepath.Abs(args[0])
		if err != nil {
			return "", err
		}
		return p, nil
	}
	cwd, err := a.getwd()
	if err != nil {
		return "", err
	}
	root := gitRoot(cwd)
	if root == "" {
		return "", errors.New("config: not inside a git repository: name the file (memex config trust FILE)")
	}
	return filepath.Join(root, ".memex.toml"), nil
}
