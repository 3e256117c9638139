// Package redistest gives tests a Redis to talk to: the shared test server
// (URL, Prefix) — the machine's Redis at 127.0.0.1:6379 unless
// MEMEX_TEST_REDIS_URL names another —, private redis-server processes a
// test owns and may kill (StartServer), and a private Redis Cluster of such
// servers (StartCluster). A missing Redis fails the test when CI=true and
// skips it, saying why, otherwise (MEMEX_TEST_REDIS_URL=off skips the
// shared-server tests on purpose; never on CI).
package redistest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// EnvURL names the environment variable holding the shared test server.
const EnvURL = "MEMEX_TEST_REDIS_URL"

// DefaultURL is the shared test server when EnvURL is unset: the machine's
// Redis.
const DefaultURL = "redis://127.0.0.1:6379/0"

// unavailable skips locally and fails on CI.
func unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		tb.Fatalf("%s (CI=true: Redis is required)", msg)
	}
	tb.Skipf("%s (start redis-server, or set %s to a Redis URL; CI=true fails instead of skipping)", msg, EnvURL)
}

// sharedURL is the shared test server's URL: EnvURL, or DefaultURL when it
// is unset. "" means the tests were told to skip it (EnvURL=off).
func sharedURL() string {
	raw := os.Getenv(EnvURL)
	switch raw {
	case "":
		return DefaultURL
	case "off", "none":
		return ""
	}
	return raw
}

// URL returns the shared test server's URL (MEMEX_TEST_REDIS_URL, else the
// machine's Redis at 127.0.0.1:6379) after checking that it answers PING.
// Unreachable, or switched off with MEMEX_TEST_REDIS_URL=off: skip with the
// reason, or fail when CI=true.
func URL(tb testing.TB) string {
	tb.Helper()
	raw := sharedURL()
	if raw == "" {
		unavailable(tb, "%s=%s switches the shared test Redis off", EnvURL, os.Getenv(EnvURL))
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		tb.Fatalf("%s is not a redis:// URL", EnvURL)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "6379")
	}
	if err := ping(host, 2*time.Second); err != nil {
		unavailable(tb, "test Redis at %s does not answer: %v", host, err)
	}
	return raw
}

// ping sends an inline PING and waits for +PONG (or an auth error, which
// still means a server is there).
func ping(addr string, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.HasPrefix(line, "+PONG") || strings.HasPrefix(line, "-NOAUTH") {
		return nil
	}
	if strings.HasPrefix(line, "-LOADING") {
		return errors.New("loading")
	}
	return fmt.Errorf("unexpected reply %q", strings.TrimSpace(line))
}

var nonKey = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// UniquePrefix returns a key prefix unique to this test without any
// cleanup (for private servers, which die with the test).
func UniquePrefix(tb testing.TB) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := nonKey.ReplaceAllString(tb.Name(), "_")
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	return "t:" + name + ":" + hex.EncodeToString(b[:])
}

// Prefix returns a key prefix unique to this test (derived from its name
// and a random suffix). Keys under it on the shared server are deleted in
// t.Cleanup (SCAN + UNLINK of prefix*); a cleanup that fails fails the
// test, since its keys stay on a server other tests and people share.
func Prefix(tb testing.TB) string {
	tb.Helper()
	raw := URL(tb)
	p := UniquePrefix(tb)
	tb.Cleanup(func() {
		if err := deletePrefix(raw, p); err != nil {
			tb.Errorf("redistest: cleaning prefix %s left its keys: %v", p, err)
		}
	})
	return p
}

// deletePrefix removes every key starting with prefix (SCAN MATCH +
// UNLINK, a page at a time) over a go-redis client, so every URL go-redis
// parses cleans up, a password with or without a username included. Its
// errors never contain the URL (it may hold a password).
func deletePrefix(rawURL, prefix string) error {
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return errors.New("the URL is not one go-redis parses")
	}
	client := redis.NewClient(opts)
	defer func() { _ = client.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	match := escapeGlob(prefix) + "*"
	var cursor uint64
	for {
		keys, next, err := client.Scan(ctx, cursor, match, 500).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			if err := client.Unlink(ctx, keys...).Err(); err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

func escapeGlob(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`)
	return r.Replace(s)
}

// ServerOptions configure a private server.
type ServerOptions struct {
	// AOF turns on appendonly, with appendfsync AppendFsync.
	AOF bool
	// AppendFsync is the AOF's fsync policy: "everysec" (the default and
	// docs/REDIS.md's recommended profile) or "always".
	AppendFsync string
	// Cluster starts the server in cluster mode.
	Cluster bool
	// Args are extra redis-server arguments ("--name", "value" ...).
	Args []string
}

// Server is a private redis-server process owned by one test.
type Server struct {
	tb   testing.TB
	dir  string
	port int
	opts ServerOptions

	mu  sync.Mutex
	cmd *exec.Cmd
	// exited is closed when the current process has been waited for.
	exited chan struct{}
}

func serverBinary(tb testing.TB) string {
	tb.Helper()
	p, err := exec.LookPath("redis-server")
	if err != nil {
		unavailable(tb, "redis-server is not installed")
	}
	if _, err := exec.LookPath("redis-cli"); err != nil {
		unavailable(tb, "redis-cli is not installed")
	}
	return p
}

func freePort(tb testing.TB) int {
	tb.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatalf("free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		// The cluster bus uses port+10000; keep it in range and free.
		if port+10000 > 65535 {
			continue
		}
		if l2, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000))); err == nil {
			_ = l2.Close()
			return port
		}
	}
	tb.Fatalf("no free port pair found")
	return 0
}

// StartServer starts a private redis-server on a free port in a directory
// under tb.TempDir and stops it (by PID) in tb.Cleanup.
func StartServer(tb testing.TB, opts ServerOptions) *Server {
	tb.Helper()
	serverBinary(tb)
	s := &Server{tb: tb, dir: tb.TempDir(), port: freePort(tb), opts: opts}
	tb.Cleanup(s.stop)
	s.start()
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is redis://Addr/0.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Dir is the server's working directory (AOF, RDB, logs).
func (s *Server) Dir() string { return s.dir }

func (s *Server) start() {
	s.tb.Helper()
	args := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--save", "",
		"--daemonize", "no",
		"--logfile", filepath.Join(s.dir, "redis.log"),
		"--protected-mode", "no",
	}
	if s.opts.AOF {
		fsync := s.opts.AppendFsync
		if fsync == "" {
			fsync = "everysec"
		}
		args = append(args, "--appendonly", "yes", "--appendfsync", fsync)
	} else {
		args = append(args, "--appendonly", "no")
	}
	if s.opts.Cluster {
		args = append(args, "--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(s.dir, "nodes.conf"),
			"--cluster-node-timeout", "1000",
			"--repl-diskless-sync-delay", "0",
			"--cluster-replica-validity-factor", "0")
	}
	args = append(args, s.opts.Args...)
	cmd := exec.Command(serverBinary(s.tb), args...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		s.tb.Fatalf("start redis-server: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := ping(s.Addr(), 500*time.Millisecond)
		if err == nil {
			return
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			s.tb.Fatalf("redis-server on %s exited at start: %s", s.Addr(), tail(string(log), 800))
		default:
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("redis-server on %s did not answer within 15s: %v", s.Addr(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Kill sends SIGKILL to the server and waits for it to exit.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// Restart starts the server again on the same port and directory (after
// Kill), and waits until it answers PING (the AOF is loaded).
func (s *Server) Restart() {
	s.tb.Helper()
	s.Kill()
	s.start()
}

// Running reports whether the server process is up.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

func (s *Server) stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
}

// Cli runs redis-cli against the server and returns its output.
func (s *Server) Cli(args ...string) (string, error) {
	out, err := exec.Command("redis-cli", append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(s.port)}, args...)...).CombinedOutput()
	return string(out), err
}

// Cluster is a private Redis Cluster of masters with replicas.
type Cluster struct {
	tb      testing.TB
	Servers []*Server
	masters int
}

// StartCluster starts masters×(1+replicasPerMaster) private servers in
// cluster mode, joins them with redis-cli --cluster create and waits for
// cluster_state:ok on every node.
func StartCluster(tb testing.TB, masters, replicasPerMaster int) *Cluster {
	tb.Helper()
	n := masters * (1 + replicasPerMaster)
	c := &Cluster{tb: tb, masters: masters}
	for range n {
		c.Servers = append(c.Servers, StartServer(tb, ServerOptions{Cluster: true, AOF: true}))
	}
	args := []string{"--cluster", "create"}
	for _, s := range c.Servers {
		args = append(args, s.Addr())
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicasPerMaster), "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		tb.Fatalf("redis-cli --cluster create: %v\n%s", err, tail(string(out), 2000))
	}
	c.WaitOK(30 * time.Second)
	c.waitReplicas(30 * time.Second)
	return c
}

// waitReplicas waits until every replica's link to its master is up (a
// replica that never synced cannot be promoted).
func (c *Cluster) waitReplicas(timeout time.Duration) {
	c.tb.Helper()
	deadline := time.Now().Add(timeout)
	for _, s := range c.Servers {
		for {
			info, err := s.Cli("info", "replication")
			if err == nil && (strings.Contains(info, "role:master") || strings.Contains(info, "master_link_status:up")) {
				break
			}
			if time.Now().After(deadline) {
				c.tb.Fatalf("replica %s not in sync within %s", s.Addr(), timeout)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// For returns a view of the cluster whose helpers report failures to tb
// (a subtest) instead of the test that started the cluster.
func (c *Cluster) For(tb testing.TB) *Cluster {
	cp := *c
	cp.tb = tb
	return &cp
}

// Addrs are the nodes' host:port addresses.
func (c *Cluster) Addrs() []string {
	out := make([]string, 0, len(c.Servers))
	for _, s := range c.Servers {
		out = append(out, s.Addr())
	}
	return out
}

// URL is redis+cluster://h1:p1,h2:p2,...
func (c *Cluster) URL() string { return "redis+cluster://" + strings.Join(c.Addrs(), ",") }

// WaitOK waits until every running node reports cluster_state:ok and
// agrees that every slot is served.
func (c *Cluster) WaitOK(timeout time.Duration) {
	c.tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok := true
		for _, s := range c.Servers {
			if !s.Running() {
				continue
			}
			out, err := s.Cli("cluster", "info")
			if err != nil || !strings.Contains(out, "cluster_state:ok") || !strings.Contains(out, "cluster_slots_ok:16384") {
				ok = false
				break
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.tb.Fatalf("cluster not ok within %s", timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Masters returns the servers that currently are masters, in slot order
// of the node ids redis reports.
func (c *Cluster) Masters() []*Server {
	var out []*Server
	for _, s := range c.Servers {
		if !s.Running() {
			continue
		}
		info, err := s.Cli("role")
		if err == nil && strings.HasPrefix(strings.TrimSpace(info), "master") {
			out = append(out, s)
		}
	}
	return out
}

// MasterFor returns the master currently serving key.
func (c *Cluster) MasterFor(key string) *Server {
	c.tb.Helper()
	for _, s := range c.Masters() {
		slot, err := s.Cli("cluster", "keyslot", key)
		if err != nil {
			continue
		}
		nodes, err := s.Cli("cluster", "nodes")
		if err != nil {
			continue
		}
		sl, _ := strconv.Atoi(strings.TrimSpace(slot))
		for _, line := range strings.Split(nodes, "\n") {
			f := strings.Fields(line)
			if len(f) < 9 || !strings.Contains(f[2], "master") || strings.Contains(f[2], "fail") {
				continue
			}
			for _, r := range f[8:] {
				lo, hi, ok := strings.Cut(r, "-")
				a, _ := strconv.Atoi(lo)
				b := a
				if ok {
					b, _ = strconv.Atoi(hi)
				}
				if sl >= a && sl <= b {
					addr, _, _ := strings.Cut(f[1], "@")
					for _, m := range c.Servers {
						if m.Addr() == addr {
							return m
						}
					}
				}
			}
		}
		break
	}
	c.tb.Fatalf("no master found for key")
	return nil
}

// KillMaster SIGKILLs the i-th current master and returns it.
func (c *Cluster) KillMaster(i int) *Server {
	c.tb.Helper()
	ms := c.Masters()
	if i < 0 || i >= len(ms) {
		c.tb.Fatalf("KillMaster(%d): %d masters", i, len(ms))
	}
	ms[i].Kill()
	return ms[i]
}

// WaitFailover waits until the running nodes mark the dead master as
// failed, a replica serves its slots (no running master is missing) and
// the cluster is ok again; it returns when that was first observed.
func (c *Cluster) WaitFailover(dead *Server, timeout time.Duration) time.Time {
	c.tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if c.failedOver(dead) {
			return time.Now()
		}
		if time.Now().After(deadline) {
			c.tb.Fatalf("no failover of %s within %s", dead.Addr(), timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *Cluster) failedOver(dead *Server) bool {
	for _, s := range c.Servers {
		if !s.Running() {
			continue
		}
		info, err := s.Cli("cluster", "info")
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return false
		}
		nodes, err := s.Cli("cluster", "nodes")
		if err != nil {
			return false
		}
		for _, line := range strings.Split(nodes, "\n") {
			f := strings.Fields(line)
			if len(f) < 3 {
				continue
			}
			addr, _, _ := strings.Cut(f[1], "@")
			if addr != dead.Addr() {
				continue
			}
			flags := "," + f[2] + ","
			if !strings.Contains(flags, ",fail,") || strings.Contains(flags, ",master,") && len(f) > 8 {
				return false
			}
		}
	}
	return true
}
