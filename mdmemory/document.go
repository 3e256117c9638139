package mdmemory

import (
	"strings"
)

// Bullet is one top-level item of a plain Markdown list (a CLAUDE.md
// convention such as "- run make test before committing"), with the
// heading it sits under.
type Bullet struct {
	Line    int
	Heading string
	Text    string
}

// Document is everything memex can import from a Markdown file.
type Document struct {
	// Block is memex's own block (Block.Found false when there is none).
	Block ParsedBlock
	// Entries are the entries in the seed's format outside the block.
	Entries []Entry
	// Bullets are plain list items outside the block and outside entries.
	Bullets  []Bullet
	Warnings []Warning
}

// MinBulletChars is the shortest list item imported.
const MinBulletChars = 12

var (
	bulletRE  = lazyRE(`^ {0,3}[-*+] +(.*\S)\s*$`)
	headingRE = lazyRE(`^ {0,3}#{1,6} +(.*?)[ #]*$`)
	fenceRE   = lazyRE("^ {0,3}(```|~~~)")
	taskRE    = lazyRE(`^\[[ xX]\] *`)
)

// ParseDocument reads doc: memex's block, the seed's entries and plain
// list items. A broken block (see Find) is an error; malformed entries are
// warnings.
func ParseDocument(doc string) (Document, error) {
	var d Document
	pb, err := ParseBlock(doc)
	if err != nil {
		return d, err
	}
	d.Block = pb
	d.Warnings = append(d.Warnings, pb.Warnings...)
	// The text outside the block, with the block's lines blanked so line
	// numbers stay right.
	outside := doc
	if pb.Found {
		outside = doc[:pb.Start] + strings.Repeat("\n", strings.Count(doc[pb.Start:pb.End], "\n")) + doc[pb.End:]
	}
	es, ws := ParseEntries(outside, 1)
	d.Entries = es
	d.Warnings = append(d.Warnings, ws...)
	d.Bullets = bullets(splitLines(outside))
	return d, nil
}

// bullets finds the top-level list items of lines, outside code fences and
// outside seed entries; an item's indented continuation lines (nested
// items included) are part of it.
func bullets(lines []string) []Bullet {
	var (
		out     []Bullet
		heading string
		fence   string
		inEntry bool
		cur     *Bullet
	)
	flush := func() {
		if cur != nil {
			cur.Text = strings.TrimSpace(cur.Text)
			if len([]rune(cur.Text)) >= MinBulletChars {
				out = append(out, *cur)
			}
			cur = nil
		}
	}
	for i, l := range lines {
		if fence != "" {
			if strings.HasPrefix(strings.TrimSpace(l), fence) {
				fence = ""
			}
			if cur != nil {
				cur.Text += "\n" + l
			}
			continue
		}
		if m := fenceRE().FindStringSubmatch(l); m != nil {
			fence = m[1]
			if cur != nil && strings.HasPrefix(l, "  ") {
				cur.Text += "\n" + l
			} else {
				flush()
			}
			continue
		}
		if inEntry {
			if strings.TrimSpace(l) == sepLine {
				inEntry = false
			}
			continue
		}
		if strings.HasPrefix(l, headPref) && headRE().MatchString(l) {
			flush()
			inEntry = true
			continue
		}
		if m := headingRE().FindStringSubmatch(l); m != nil {
			flush()
			heading = m[1]
			continue
		}
		if m := bulletRE().FindStringSubmatch(l); m != nil && !strings.HasPrefix(l, "    ") {
			flush()
			text := taskRE().ReplaceAllString(m[1], "")
			cur = &Bullet{Line: i + 1, Heading: heading, Text: text}
			continue
		}
		switch {
		case cur != nil && strings.TrimSpace(l) != "" && (strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "\t")):
			cur.Text += "\n" + strings.TrimRight(l, " \t")
		default:
			flush()
		}
	}
	flush()
	return out
}
