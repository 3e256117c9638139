package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memex-dev/memex/gatekeeper"
	"github.com/memex-dev/memex/wire"
)

// memex qa verify|freeze|deprecate|reactivate give a human verdict on the
// local store: a verified QA is injected as verified (never as the
// unverified probation item), a deprecated one not at all, and a human
// can undo the deprecation.
func TestQAVerdictsLocal(t *testing.T) {
	c := newCLI(t)
	id := strings.TrimSpace(c.mustRun("", "qa", "add", "--question", "How do I list open ports on Linux?",
		"--answer", "Run ss -ltnp: it lists listening TCP sockets with their processes."))
	block := func() string { return c.mustRun("", "run", "--dry-run", "how do I list open ports on linux") }
	if out := c.mustRun("", "qa", "verify", id); !strings.Contains(out, id+": verified") {
		t.Errorf("qa verify: %q", out)
	}
	if b := block(); !strings.Contains(b, "[QA_REF "+id+"]") || !strings.Contains(b, gatekeeper.VerifiedLabel) || strings.Contains(b, gatekeeper.ProbationLabel) {
		t.Errorf("a verified QA is not injected as verified:\n%s", b)
	}
	c.mustRun("", "qa", "freeze", id)
	c.mustRun("", "qa", "deprecate", id)
	if b := block(); strings.Contains(b, id) {
		t.Errorf("a deprecated QA is injected:\n%s", b)
	}
	if out := c.mustRun("", "qa", "reactivate", id); !strings.Contains(out, id+": active") {
		t.Errorf("qa reactivate: %q", out)
	}
	if out := c.mustRun("", "search", "--json", "--min-score", "0", "list open ports"); !strings.Contains(out, id) {
		t.Errorf("a reactivated QA is not found: %s", out)
	}
	if code, _, errOut := c.run("", "qa", "verify"); code != exitUsage || !strings.Contains(errOut, "qa verify") {
		t.Errorf("qa verify without an id: exit %d %q", code, errOut)
	}
}

// Over http the verdicts go to their own admin routes and land in the
// audit log under their names.
func TestQAVerdictsOverHTTP(t *testing.T) {
	c := newCLI(t)
	out := c.mustRun("", "serve", "keys", "new", "--id", "ops", "--role", "admin", "--projects", "test")
	secret := secretLine.FindStringSubmatch(out)[1]
	cfgFile := filepath.Join(c.dir, "serve.toml")
	if err := os.WriteFile(cfgFile, []byte(out[strings.Index(out, "[[serve.keys]]"):]), 0o600); err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(c.mustRun("", "qa", "add", "--question", "How do I restart nginx safely?", "--answer", "Run nginx -t, then systemctl reload nginx."))
	addr := freePort(t)
	ctx, cancel := context.WithCancel(t.Context())
	var stderr bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &stderr,
		getenv: func(k string) string { return c.env[k] }, getwd: func() (string, error) { return c.cwd, nil }, registry: defaultRegistry()}
	done := make(chan int, 1)
	go func() {
		done <- a.main(ctx, []string{"serve", "--config", cfgFile, "--store", c.store, "--addr", addr})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop on cancel")
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if res, err := http.Get("http://" + addr + "/healthz"); err == nil {
			res.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not come up; stderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.env["MEMEX_API_KEY"] = secret
	remote := "http://" + addr
	for _, v := range []string{"verify", "freeze", "deprecate", "reactivate"} {
		c.mustRun("", "qa", v, id, "--store", remote)
	}
	req, _ := http.NewRequest("GET", remote+"/admin/v1/audit?project_id=test", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var ar wire.AuditResponse
	if err := json.NewDecoder(res.Body).Decode(&ar); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ar.Entries {
		if e.QAID == id && e.KeyID == "ops" {
			got = append(got, e.Action+":"+e.Before["status"].(string)+"→"+e.After["status"].(string))
		}
	}
	want := "verify:candidate→verified freeze:verified→frozen deprecate:frozen→deprecated reactivate:deprecated→active"
	if strings.Join(got, " ") != want {
		t.Errorf("audit of the verdicts over http:\n got %v\nwant %s", got, want)
	}
}
