// Package ui serves memex's trust dashboard: HTML pages, rendered on the
// server with charts as inline SVG, over the memex HTTP API.
//
// The dashboard is a client of the API it is mounted beside: every number
// it shows comes from the admin and QA routes (GET /admin/v1/projects,
// /admin/v1/projects/{id}/stats, /admin/v1/audit, /v1/qa), called in
// process with the signed-in key, and every human verdict it offers is a
// POST /admin/v1/qa/{id}/{verdict} (an edit a PATCH /admin/v1/qa/{id}) —
// so the dashboard can never show or do more than the key could through
// the API, and each verdict lands in the same audit log. memex serve
// mounts it at /ui/ (admin keys, a login form keeping the key in an
// HttpOnly, SameSite=Strict cookie); memex ui serves it on loopback over
// the local store with no key.
//
// The pages need no JavaScript: assets are embedded (go:embed), nothing is
// fetched from the network, a strict Content-Security-Policy forbids
// scripts, every action is a form POST carrying a CSRF token, and all QA
// text goes through html/template's escaping.
package ui
