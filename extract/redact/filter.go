package redact

import (
	"strings"
	"unicode"
)

// placeholderWords are values that stand for a secret rather than being one.
var placeholderWords = map[string]bool{
	"password": true, "passwd": true, "pass": true, "pwd": true, "secret": true, "token": true,
	"apikey": true, "api_key": true, "api-key": true, "key": true, "value": true, "changeme": true,
	"none": true, "null": true, "nil": true, "undefined": true, "true": true, "false": true,
	"empty": true, "required": true, "optional": true, "string": true, "str": true, "test": true,
	"secretstr": true, "sensitive": true, "hidden": true, "masked": true, "omitted": true, "unset": true,
	"mypassword": true, "yourpassword": true, "mysecret": true, "yoursecret": true, "mytoken": true,
	"yourtoken": true, "secret123": true, "password123": true,
	"todo": true, "tbd": true, "fixme": true, "foo": true, "bar": true, "foobar": true,
	"qwerty": true, "letmein": true, "default": true, "sample": true, "notasecret": true,
}

// placeholderParts mark a placeholder wherever they appear in the value.
var placeholderParts = []string{
	"xxxx", "****", "•••", "...", "…", "${", "{{", "<", ">", "$(", "%(",
	"your_", "your-", "yourkey", "your key", "example", "placeholder", "redacted", "changeme",
	"change_me", "change-me", "dummy", "insert_", "insert-", "replace_me", "replace-me",
	"notreal", "not_real", "not-real", "fake_", "fake-", "sample_", "0000000000", "1234567890",
}

// IsPlaceholder reports whether a secret candidate is a stand-in, not a
// secret: "xxx…", "<your-key>", "changeme", "${VAR}", "$VAR", "%VAR%",
// "*****", "[REDACTED:…]", documented example keys, a word such as
// "password" or "string", or a run of one repeated character.
func IsPlaceholder(v string) bool {
	v = strings.Trim(v, `"'`+"`")
	if v == "" {
		return true
	}
	lv := strings.ToLower(v)
	if placeholderWords[lv] {
		return true
	}
	switch lv[0] {
	case '$', '%', '!', '[', '&', '*':
		return true
	}
	for _, p := range placeholderParts {
		if strings.Contains(lv, p) {
			return true
		}
	}
	if e := Entropy(v); e == 0 || len(v) >= 6 && e < 1.5 {
		return true
	}
	return false
}

// words splits an identifier into lower-case words at separators and
// camelCase boundaries: "dbPasswordHash" → db, password, hash.
func words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case len(cur) > 0 && (unicode.IsUpper(r) && (unicode.IsLower(rs[i-1]) ||
			i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1])) ||
			unicode.IsDigit(r) != unicode.IsDigit(rs[i-1])):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return out
}

// notSecretKeyWords, in a key, say the value describes a secret rather than
// holding it: password_hint, token_type, secret_name, max_tokens, ….
var notSecretKeyWords = map[string]bool{
	"hint": true, "label": true, "placeholder": true, "prompt": true, "message": true, "msg": true,
	"text": true, "title": true, "description": true, "desc": true, "help": true, "error": true,
	"errors": true, "policy": true, "field": true, "length": true, "len": true, "min": true, "max": true,
	"file": true, "path": true, "dir": true, "url": true, "uri": true, "name": true, "type": true,
	"id": true, "env": true, "var": true, "required": true, "enabled": true, "disabled": true,
	"reset": true, "strength": true, "regex": true, "pattern": true, "validator": true,
	"validation": true, "rule": true, "rules": true, "format": true, "mode": true, "manager": true,
	"store": true, "provider": true, "ref": true, "expiry": true, "expires": true, "expiration": true,
	"ttl": true, "count": true, "limit": true, "timeout": true, "header": true, "prefix": true,
	"param": true, "endpoint": true, "flag": true, "attempts": true, "changed": true, "updated": true,
	"input": true, "output": true, "column": true, "selector": true, "button": true, "visible": true,
	"icon": true, "kind": true, "usage": true, "budget": true, "window": true, "size": true,
	"index": true, "idx": true, "class": true, "style": true, "confirm": true, "confirmation": true,
	"forgot": true, "show": true, "hide": true, "toggle": true, "generator": true, "hash": true,
	"hashed": true, "hasher": true, "digest": true, "salt": true, "encoder": true, "encoded": true,
	"set": true, "get": true, "new": true, "old": true, "current": true, "check": true, "verify": true,
	"location": true, "source": true, "command": true, "cmd": true, "helper": true, "sizes": true,
	"lifetime": true, "duration": true, "age": true, "list": true, "map": true, "ids": true,
	"names": true, "keys": true, "version": true, "algorithm": true, "alg": true, "len_": true,
}

// codeWords are unquoted values that are code, not literals.
var codeWords = map[string]bool{
	"int": true, "integer": true, "bool": true, "boolean": true, "number": true, "any": true,
	"object": true, "bytes": true, "byte": true, "char": true, "option": true, "self": true,
	"this": true, "input": true, "getpass": true, "prompt": true, "os": true, "process": true,
	"config": true, "settings": true, "env": true, "environ": true, "args": true, "params": true,
	"request": true, "req": true, "ctx": true, "opts": true, "options": true, "cfg": true,
	"function": true, "func": true, "lambda": true, "return": true, "await": true, "new": true,
	"static": true, "final": true, "const": true, "readonly": true, "private": true, "public": true,
	"protected": true, "field": true, "column": true, "text": true, "varchar": true, "secret": true,
	"secrets": true, "credentials": true, "vault": true, "keyring": true, "keychain": true,
	"description": true, "type": true, "format": true, "default": true, "example": true,
}

// proseWords in a quoted value mark a sentence, not a passphrase.
var proseWords = map[string]bool{
	"the": true, "your": true, "enter": true, "please": true, "is": true, "to": true, "a": true,
	"of": true, "must": true, "be": true, "at": true, "least": true, "characters": true, "for": true,
	"and": true, "or": true, "not": true, "with": true, "are": true, "invalid": true, "wrong": true,
	"incorrect": true, "does": true, "match": true, "new": true, "this": true, "you": true,
}

var (
	passwordKeyWords = map[string]bool{"password": true, "passwd": true, "passphrase": true,
		"pwd": true, "pass": true, "passwort": true, "pw": true}
	secretKeyWords = map[string]bool{"secret": true, "token": true, "apikey": true,
		"credential": true, "credentials": true, "secretkey": true, "accesskey": true,
		"privatekey": true, "authkey": true, "clientsecret": true, "authtoken": true,
		"accesstoken": true, "refreshtoken": true, "bearertoken": true, "sessiontoken": true}
	// keyPairs are two consecutive key words that make a secret key word.
	keyPairs = map[[2]string]bool{{"api", "key"}: true, {"access", "key"}: true,
		{"private", "key"}: true, {"auth", "key"}: true, {"secret", "key"}: true,
		{"client", "secret"}: true, {"signing", "key"}: true, {"encryption", "key"}: true,
		{"master", "key"}: true, {"app", "key"}: true}
)

// keyKind classifies an assignment key: "password", "secret" or "".
func keyKind(key string) string {
	ws := words(key)
	kind := ""
	for i, w := range ws {
		switch {
		case passwordKeyWords[w] && (w != "pass" || len(ws) > 1):
			// "pass" alone is a word of prose ("first pass: …") and of test
			// output ("--- PASS: TestX"); db_pass and smtpPass are keys.
			kind = "password"
		case secretKeyWords[w]:
			if kind == "" {
				kind = "secret"
			}
		case i+1 < len(ws) && keyPairs[[2]string{w, ws[i+1]}]:
			if kind == "" {
				kind = "secret"
			}
		}
	}
	if kind == "" || len(ws) == 0 {
		return ""
	}
	// The last word says what the value is: password_hint is a hint.
	if notSecretKeyWords[ws[len(ws)-1]] {
		return ""
	}
	return kind
}

// keepAssignment is the Keep check of the assignment rules. groups: 1 key,
// 2 opening quote, 3 quoted value, 4 unquoted value, 5 what follows an
// unquoted value ("(", "[", "<" mark code).
func keepAssignment(kind string, minLen int) func([]string) bool {
	return func(g []string) bool {
		if len(g) < 6 || !mentions(g[1], kind) || keyKind(g[1]) != kind {
			return false
		}
		quoted, v := g[3] != "", g[3]
		if !quoted {
			v = strings.TrimRight(g[4], ".:!?")
		}
		if isNumber(v) {
			return false // MinLevelPass = 0.25
		}
		if len(v) < minLen || len(v) > 256 {
			return false
		}
		lv := strings.ToLower(v)
		if kind == "password" && lv == strings.ToLower(g[1]) {
			return false
		}
		if quoted {
			if strings.ContainsAny(v, " \t") {
				for _, w := range strings.Fields(lv) {
					if proseWords[strings.Trim(w, ".,:;!?")] {
						return false
					}
				}
				if strings.HasSuffix(v, ".") || strings.HasSuffix(v, "?") || strings.HasSuffix(v, ":") {
					return false
				}
			}
			// A secret literal of the generic kind has a digit, a base64
			// symbol or mixed case: "secret_blocked" is a name.
			if kind == "secret" && !hasDigit(v) && !strings.ContainsAny(v, "+/=") &&
				(strings.ToLower(v) == v || strings.ToUpper(v) == v) {
				return false
			}
			return true
		}
		// Unquoted: code, not a literal?
		if g[5] != "" || codeWords[lv] || strings.HasPrefix(v, "-") {
			return false
		}
		if isMemberAccess(v) || isIdentifier(v) && wordy(v) {
			// cfg.Password, testP256PrivateKey, userPassword: code.
			return false
		}
		if kind == "secret" && !hasDigit(v) && isIdentifier(v) {
			// token = accessToken, secret: mySecretName — a variable.
			return false
		}
		return true
	}
}

// mentions is a cheap test that key may be of kind before keyKind splits it.
func mentions(key, kind string) bool {
	lk := strings.ToLower(key)
	if kind == "password" {
		return strings.Contains(lk, "pass") || strings.Contains(lk, "pw")
	}
	return strings.Contains(lk, "secret") || strings.Contains(lk, "token") ||
		strings.Contains(lk, "key") || strings.Contains(lk, "credential")
}

// isMemberAccess reports a dotted identifier chain (cfg.Password, os.environ).
func isMemberAccess(v string) bool {
	if !strings.Contains(v, ".") {
		return false
	}
	for _, part := range strings.Split(v, ".") {
		if !isIdentifier(part) || hasDigit(part[:1]) {
			return false
		}
	}
	return true
}

// wordy reports an identifier made mostly of words (letters with a vowel,
// three or more long): testP256PrivateKey, user_password_field.
func wordy(v string) bool {
	n := 0
	for _, w := range words(v) {
		if len(w) >= 3 && strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLetter(r) }) < 0 &&
			strings.ContainsAny(w, "aeiou") {
			n += len(w)
		}
	}
	return n*10 >= len(v)*6
}

func isIdentifier(v string) bool {
	if v == "" {
		return false
	}
	for _, r := range v {
		if !(r == '_' || r == '$' || r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r))) {
			return false
		}
	}
	return true
}

func isNumber(v string) bool {
	v = strings.TrimLeft(v, "+-")
	return v != "" && strings.Trim(v, "0123456789._eE") == ""
}

func hasDigit(s string) bool { return strings.IndexFunc(s, unicode.IsDigit) >= 0 }

// keepHighEntropy is the Keep check of generic-high-entropy: the candidate
// (group 1) must mix letters and digits, not be hex (commit ids, hashes)
// and not be made of words (identifiers, paths).
func keepHighEntropy(g []string) bool {
	v := g[len(g)-1]
	if v == "" {
		return false
	}
	var letters, digits, hex, wordyN int
	run := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		isLower := c >= 'a' && c <= 'z'
		switch {
		case c >= '0' && c <= '9':
			digits++
		case isLower || c >= 'A' && c <= 'Z':
			letters++
		}
		if c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' {
			hex++
		}
		// Lower-case runs of 5+ letters, optionally after one capital, read
		// as words.
		if isLower {
			run++
			continue
		}
		if run >= 5 {
			wordyN += run
		}
		run = 0
	}
	if run >= 5 {
		wordyN += run
	}
	switch {
	case digits == 0 || letters == 0:
		return false
	case hex == len(v):
		return false
	case wordyN*2 >= len(v):
		return false
	case strings.Count(v, "/") >= 2 && wordyN > 0:
		return false // a path
	case isIdentifier(v) && wordy(v):
		return false // testRSAPSS2048PrivateKey
	}
	return true
}

// cliNotValues are words that follow a flag's name in prose.
var cliNotValues = map[string]bool{"flag": true, "option": true, "argument": true, "arg": true,
	"parameter": true, "param": true, "switch": true, "instead": true, "when": true, "if": true,
	"only": true, "also": true, "too": true, "here": true, "there": true, "set": true, "works": true}

// keepMySQLPassword drops a -p value that is a port mapping (docker run
// --name k-mysql -p3306:3306): digits and dots around colons.
func keepMySQLPassword(g []string) bool {
	v := g[len(g)-1]
	return !strings.Contains(v, ":") || strings.Trim(v, "0123456789.:") != ""
}

// keepCLIValue drops flag values that are the next flag, a reference or a
// word of prose ("use the --token flag").
func keepCLIValue(g []string) bool {
	v := g[len(g)-1]
	lv := strings.ToLower(strings.TrimRight(v, ".,;:!?)"))
	return v != "" && !strings.HasPrefix(v, "-") && !codeWords[lv] && !cliNotValues[lv] && !proseWords[lv]
}
