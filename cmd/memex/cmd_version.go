package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = "dev"

func cmdVersion(_ context.Context, a *app, args []string) error {
	fs, _ := a.newFlagSet("version", "version", "  memex version")
	if _, err := a.parseFlags(fs, args); err != nil {
		return err
	}
	v, commit, modified, when := version, "unknown", false, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			case "vcs.time":
				when = s.Value
			}
		}
		if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	if modified {
		commit += "-dirty"
	}
	fmt.Fprintf(a.stdout, "memex %s\ncommit %s %s\n%s %s/%s\n", v, commit, when, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
