package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/internal/redistest"
	redisstore "github.com/memex-dev/memex/plugins/redis"
)

// TestRedisNewerFormat: a Redis store a newer memex marked is refused by
// the CLI's commands and by memex serve at startup, with an error naming
// both formats and never the URL's password.
func TestRedisNewerFormat(t *testing.T) {
	const password = "format-s3cret"
	srv := redistest.StartServer(t, redistest.ServerOptions{Args: []string{"--requirepass", password}})
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: password})
	defer rdb.Close()
	newer := strconv.Itoa(redisstore.FormatVersion + 1)
	if err := rdb.Set(t.Context(), redisstore.DefaultPrefix+":format", newer, 0).Err(); err != nil {
		t.Fatal(err)
	}
	store := "redis://:" + password + "@" + srv.Addr() + "/0"
	want := "redis store at " + redisstore.DefaultPrefix + " is in format " + newer +
		"; this memex reads up to " + strconv.Itoa(redisstore.FormatVersion) + ": upgrade memex"
	c := newCLI(t)
	for _, args := range [][]string{
		{"search", "--store", store, "how are formats refused"},
		{"serve", "--insecure-local", "--addr", "127.0.0.1:0", "--store", store},
	} {
		code, out, errOut := c.run("", args...)
		if code != exitError || !strings.Contains(errOut, want) || strings.Contains(out+errOut, password) {
			t.Errorf("memex %s: exit %d, want %d and %q without the password\nstdout: %s\nstderr: %s", args[0], code, exitError, want, out, errOut)
		}
	}
	if got := rdb.Get(t.Context(), redisstore.DefaultPrefix+":format").Val(); got != newer {
		t.Errorf("the refused store's mark is %q, want %q kept", got, newer)
	}
}
