package redact

import (
	"bytes"
	"strings"
	"testing"
)

const testKeyBody = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"

func TestLinesPrivateKeyAcrossPieces(t *testing.T) {
	l := New().NewLines()
	pieces := []string{
		"here is the key:",
		"-----BEGIN OPENSSH PRIVATE KEY-----",
		testKeyBody,
		testKeyBody[:40],
		"-----END OPENSSH PRIVATE KEY----- done",
		"after the key " + testKeyBody,
	}
	var out []string
	var n int
	for _, p := range pieces {
		o, fs := l.Redact(p)
		out = append(out, o)
		n += len(fs)
	}
	for i := 1; i <= 3; i++ {
		if strings.Contains(out[i], testKeyBody[:20]) || !strings.Contains(out[i], "[REDACTED:private-key]") {
			t.Errorf("piece %d = %q: key material not redacted", i, out[i])
		}
	}
	if out[0] != pieces[0] {
		t.Errorf("text before the key changed: %q", out[0])
	}
	if out[4] != "[REDACTED:private-key] done" {
		t.Errorf("END line = %q", out[4])
	}
	if out[5] != pieces[5] {
		t.Errorf("state not closed after END: %q", out[5])
	}
	if n == 0 {
		t.Error("no finding reported")
	}
}

func TestLinesMultiLineText(t *testing.T) {
	l := New().NewLines()
	got, _ := l.Redact("a\n-----BEGIN RSA PRIVATE KEY-----\n" + testKeyBody + "\n-----END RSA PRIVATE KEY-----\nb")
	if strings.Contains(got, testKeyBody[:20]) || !strings.HasPrefix(got, "a\n") || !strings.HasSuffix(got, "\nb") {
		t.Errorf("got %q", got)
	}
}

func TestWriterKeyOneLinePerWrite(t *testing.T) {
	var buf bytes.Buffer
	w := New().NewWriter(&buf)
	for _, line := range []string{"-----BEGIN EC PRIVATE KEY-----\n", testKeyBody + "\n", "-----END EC PRIVATE KEY-----\n", "ok\n"} {
		if _, err := w.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), testKeyBody[:20]) || !strings.HasSuffix(buf.String(), "ok\n") {
		t.Errorf("writer output %q", buf.String())
	}
}
