package retrieval

import (
	"slices"
	"strings"
	"testing"
)

func TestTerms(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"empty", "", nil},
		{"punctuation only", " ,;!? ... -- // ", nil},
		{"english stopwords and stems", "How do I install the packages?", []string{"instal", "packag"}},
		{"case folding", "Running RUNS runner", []string{"run", "runs", "runner"}},
		{"negation kept", "command not found", []string{"command", "not", "found"}},
		{"possessive", "the user's files", []string{"user", "file"}},
		{"contraction stopword", "don't panic", []string{"panic"}},
		{"curly apostrophe", "it’s the server’s log", []string{"server", "log"}},
		{"snake_case", "get_user_name", []string{"get_user_name", "get", "user", "name"}},
		{"camelCase", "parseConfig", []string{"parseconfig", "pars", "config"}},
		{"PascalCase acronym", "HTTPServer", []string{"httpserver", "http", "server"}},
		{"acronym at end", "parseJSON", []string{"parsejson", "pars", "json"}},
		{"pkg.Func", "json.Unmarshal", []string{"json.unmarshal", "json", "unmarsh"}},
		{"rust path", "std::io::Error", []string{"std::io::error", "std", "io", "error"}},
		{"absolute path", "/usr/lib/libfoo.so.1", []string{"usr/lib/libfoo.so.1", "usr", "lib", "libfoo.so.1", "libfoo", "1"}},
		{"relative path", "src/foo/bar.go", []string{"src/foo/bar.go", "src", "foo", "bar.go", "bar", "go"}},
		{"windows path", `C:\Users\dev\app.exe`, []string{`c:\users\dev\app.exe`, "c", "user", "dev", "app.exe", "app", "exe"}},
		{"url", "https://example.com/a-b", []string{"https://example.com/a-b", "https", "example.com", "exampl", "com", "a-b", "b"}},
		{"flag", "--force-with-lease", []string{"force-with-lease", "forc", "leas"}},
		{"sentence period trimmed", "Open file.txt.", []string{"open", "file.txt", "file", "txt"}},
		{"errno kept", "ENOENT EACCES", []string{"enoent", "eacces"}},
		{"rust error code", "error[E0308]: mismatched types", []string{"error", "e0308", "mismatch", "type"}},
		{"numbers", "HTTP 404 at 0x1f", []string{"http", "404", "0x1f"}},
		{"version", "v1.2.3", []string{"v1.2.3", "v1", "2", "3"}},
		{"chinese bigrams", "内存泄漏", []string{"内", "内存", "存", "存泄", "泄", "泄漏", "漏"}},
		{"chinese stop unigram", "我的代码", []string{"我的", "的代", "代", "代码", "码"}},
		{"chinese single", "错", []string{"错"}},
		{"japanese", "テスト", []string{"テ", "テス", "ス", "スト", "ト"}},
		{"korean", "한국어", []string{"한", "한국", "국", "국어", "어"}},
		{"mixed chinese and code", "调用parseConfig失败", []string{"调", "调用", "用", "parseconfig", "pars", "config", "失", "失败", "败"}},
		{"full-width ascii", "ＨＴＴＰ　４０４", []string{"http", "404"}},
		{"accented latin", "Café naïve", []string{"café", "naïve"}},
		{"full-width joiner separates", "ｘ／ｙ／", []string{"x", "y"}},
		{"long token dropped, parts kept", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa_b",
			[]string{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"[:0] + "b"}},
	}
	a := NewAnalyzer()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := a.Terms(tc.text)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Terms(%q)\n got %q\nwant %q", tc.text, got, tc.want)
			}
		})
	}
}

func TestTermsQueryMatchesDocument(t *testing.T) {
	// The same concept written differently must share terms.
	a := NewAnalyzer()
	tests := []struct{ doc, query, shared string }{
		{"func parseConfig(path string)", "parse config", "config"},
		{"func parseConfig(path string)", "parsing the configuration", "pars"},
		{"open /etc/nginx/nginx.conf failed", "nginx.conf", "nginx.conf"},
		{"ModuleNotFoundError: No module named 'yaml'", "module not found error", "error"},
		{"数据库连接超时", "连接数据库的时候超时了", "超时"},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			d, q := a.Terms(tc.doc), a.Terms(tc.query)
			if !slices.Contains(d, tc.shared) || !slices.Contains(q, tc.shared) {
				t.Errorf("want %q in both\n doc   %q\n query %q", tc.shared, d, q)
			}
		})
	}
}

func TestAnalyze(t *testing.T) {
	a := NewAnalyzer()
	d := a.Analyze("Install nginx, install it", "nginx: apt install nginx")
	want := map[string]TF{
		"instal": {2, 1},
		"nginx":  {1, 2},
		"apt":    {0, 1},
	}
	if len(d.Terms) != len(want) {
		t.Fatalf("Analyze terms = %v, want %v", d.Terms, want)
	}
	for term, tf := range want {
		if d.Terms[term] != tf {
			t.Errorf("tf[%q] = %v, want %v", term, d.Terms[term], tf)
		}
	}
	if d.Len != [NumFields]uint32{3, 4} {
		t.Errorf("Len = %v, want [3 4]", d.Len)
	}
}

func TestTermsDeterministicAndConcurrent(t *testing.T) {
	a := NewAnalyzer()
	text := "内存泄漏 in parseHTTPHeader at /usr/lib/x.so: ENOENT (E0308) 404 running tests"
	want := a.Terms(text)
	done := make(chan []string)
	for range 8 {
		go func() { done <- a.Terms(text) }()
	}
	for range 8 {
		if got := <-done; !slices.Equal(got, want) {
			t.Fatalf("Terms not deterministic:\n%q\n%q", got, want)
		}
	}
}

func TestNegatedContractions(t *testing.T) {
	a := NewAnalyzer()
	for _, in := range []string{"wasn't", "Can't", "won’t", "didn't"} {
		if got := a.Terms(in); len(got) != 1 || got[0] != "not" {
			t.Errorf("Terms(%q) = %v, want [not]", in, got)
		}
	}
	if got := a.Terms("my card wasn't delivered"); strings.Join(got, " ") != "card not deliv" {
		t.Errorf("Terms = %v", got)
	}
}
