// Package mdmemory owns memex's Markdown memory format (SPEC §11, the
// ExcelManus design): entries written as
//
//	### [2026-01-15 14:30] error_solution (qa-7f3k, L2)
//
//	**Q:** why does go test -race report a data race on the cache map?
//
//	Guard the map with a sync.RWMutex ...
//
//	---
//
// grouped into one delimited block of an instruction file (CLAUDE.md,
// AGENTS.md, GEMINI.md) between a begin marker carrying the format version
// and the export options and an end marker. Everything outside the block is
// left byte for byte. The package is pure: it formats, parses, enforces the
// capacity limit (newest first, within a number of characters and of
// entries) and splices a block into a document; reading and writing files
// is the caller's (cmd/memex, with internal/atomicfile).
//
// The format round-trips: Parse(Format(entries)) gives the entries back.
// Content lines that would read as structure (a "---" separator, an entry
// heading, a memex marker, a "**Q:**" line) are escaped with one leading
// backslash, which Markdown renders invisibly and Parse removes.
package mdmemory
