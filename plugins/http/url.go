package httpstore

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/memex-dev/memex/core"
)

// ParseURL reads a store URL into a Config: the base URL, plus options as
// query parameters, which are removed from BaseURL:
//
//	https://memex.example.com/?compat=true&timeout=5s&retries=2&cooldown=30s
//
// compat (bool) talks to the original service; timeout and cooldown are Go
// durations; retries is an integer (negative: none). An unknown parameter
// is an error naming it. APIKey and OutboxDir are left for the caller (the
// key never belongs in a URL: credentials in it are refused).
func ParseURL(raw string) (Config, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Config{}, fmt.Errorf("http: store URL must be http://host[:port][/path] or https://…: %w", core.ErrInvalid)
	}
	if u.User != nil {
		return Config{}, fmt.Errorf("http: store URL must not hold credentials (set the API key instead): %w", core.ErrInvalid)
	}
	var cfg Config
	for k, vs := range u.Query() {
		v := vs[len(vs)-1]
		bad := func(what string) error {
			return fmt.Errorf("http: store URL parameter %s: %s: %w", k, what, core.ErrInvalid)
		}
		switch k {
		case "compat":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return Config{}, bad("must be true or false")
			}
			cfg.Compat = b
		case "timeout", "cooldown":
			d, err := time.ParseDuration(v)
			if err != nil {
				return Config{}, bad("must be a duration such as 5s")
			}
			if k == "timeout" {
				cfg.Timeout = d
			} else {
				cfg.Cooldown = d
			}
		case "retries":
			n, err := strconv.Atoi(v)
			if err != nil {
				return Config{}, bad("must be an integer")
			}
			cfg.Retries = n
		default:
			return Config{}, fmt.Errorf("http: store URL: unknown parameter %q (known: compat, timeout, retries, cooldown): %w", k, core.ErrInvalid)
		}
	}
	u.RawQuery, u.Fragment = "", ""
	cfg.BaseURL = u.String()
	return cfg, nil
}
