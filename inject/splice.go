package inject

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// textEditor changes a manifest in place: it splices text into the original bytes at
// the positions of the parsed nodes, so that every byte it does not mean to change
// stays as it was (comments, order, quoting, indentation, separators). Each change is
// also made to the node tree, and the caller checks that the edited text parses to that
// tree.
type textEditor struct {
	src   []byte
	lines []int // byte offset of the start of each line (0-based index = line-1)
	nl    string
	edits []textEdit
	ends  map[*yaml.Node]int // where a block collection's text ends, before any edit
	// finalBreak: a line break was added at the end of a source that had none.
	finalBreak bool
}

type textEdit struct {
	off, del int
	text     string
	indent   int // block insertions at one offset: the deeper goes first (inside the other)
	seq      int // then the order of creation
}

func newEditor(src []byte) *textEditor {
	e := &textEditor{src: src, lines: []int{0}, nl: "\n", ends: map[*yaml.Node]int{}}
	for i, c := range src {
		if c == '\n' {
			e.lines = append(e.lines, i+1)
		}
	}
	if bytes.Contains(src, []byte("\r\n")) {
		e.nl = "\r\n"
	}
	return e
}

// offset is the byte offset of 1-based line and column (columns count characters).
func (e *textEditor) offset(line, col int) (int, error) {
	if line < 1 || line > len(e.lines) {
		return 0, fmt.Errorf("line %d out of range", line)
	}
	off := e.lines[line-1]
	for i := 1; i < col; i++ {
		if off >= len(e.src) {
			return 0, fmt.Errorf("column %d out of range on line %d", col, line)
		}
		_, n := utf8.DecodeRune(e.src[off:])
		off += n
	}
	return off, nil
}

func (e *textEditor) add(off, del int, text string) { e.addAt(off, del, text, 0) }

func (e *textEditor) addAt(off, del int, text string, indent int) {
	e.edits = append(e.edits, textEdit{off: off, del: del, text: text, indent: indent, seq: len(e.edits)})
}

// apply returns the source with every edit made, in one pass over it: each edit is
// copied in once, so that the cost grows with the source and the edits, not with their
// product (a manifest of thousands of pod templates).
func (e *textEditor) apply() []byte {
	edits := slices.Clone(e.edits)
	// By offset; at one offset the texts come out deepest first, then in the order
	// they were created.
	slices.SortStableFunc(edits, func(a, b textEdit) int {
		if a.off != b.off {
			return a.off - b.off
		}
		if a.indent != b.indent {
			return b.indent - a.indent
		}
		return a.seq - b.seq
	})
	size := len(e.src)
	for _, ed := range edits {
		size += len(ed.text) - ed.del
	}
	out := make([]byte, 0, size)
	at := 0 // how much of src is copied or deleted
	for _, ed := range edits {
		if ed.off > at {
			out = append(out, e.src[at:ed.off]...)
			at = ed.off
		}
		out = append(out, ed.text...)
		at = max(at, ed.off+ed.del)
	}
	return append(out, e.src[at:]...)
}

// jsonish tells whether flow collection n is written as JSON (its first key, or its
// first item's, is double-quoted; an empty one in a file that starts as JSON), so that
// what goes into it is written the same way.
func (e *textEditor) jsonish(n *yaml.Node) bool {
	for n != nil && len(n.Content) > 0 {
		if n.Kind == yaml.MappingNode {
			return n.Content[0].Style&yaml.DoubleQuotedStyle != 0
		}
		n = n.Content[0]
		if n.Kind == yaml.ScalarNode {
			return n.Style&yaml.DoubleQuotedStyle != 0
		}
	}
	t := bytes.TrimLeft(e.src, " \t\r\n")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

// setKey adds key: value at the end of mapping m (which has no such key).
func (e *textEditor) setKey(m *yaml.Node, key string, value *yaml.Node, compact bool) error {
	k := str(key)
	if isFlow(m) {
		at, err := e.flowEnd(m)
		if err != nil {
			return err
		}
		sep := ""
		if len(m.Content) > 0 {
			sep = ", "
		}
		if e.jsonish(m) {
			e.add(at, 0, sep+jsonText(k)+": "+jsonText(value))
		} else {
			e.add(at, 0, sep+scalarText(k)+": "+flowText(value))
		}
	} else {
		if len(m.Content) == 0 {
			return fmt.Errorf("an empty block mapping")
		}
		indent := m.Content[0].Column - 1
		at, err := e.blockEnd(m, indent)
		if err != nil {
			return err
		}
		e.addAt(at, 0, e.block(indent, renderPair(key, value, compact)), indent)
	}
	setValue(m, -1, key, value)
	return nil
}

func (e *textEditor) put(m *yaml.Node, key string, value *yaml.Node, compact bool) error {
	i := nullAt(m, key)
	if i < 0 {
		return e.setKey(m, key, value, compact)
	}
	if err := e.replaceNull(m, m.Content[i-1], m.Content[i], value, compact); err != nil {
		return err
	}
	setValue(m, i, key, value)
	return nil
}

// replaceNull writes value where the null v of key k stands in mapping m.
func (e *textEditor) replaceNull(m, k, v, value *yaml.Node, compact bool) error {
	if isFlow(m) {
		// A flow or JSON mapping: the null is a token (null, ~) to replace.
		off, err := e.offset(v.Line, v.Column)
		if err != nil {
			return err
		}
		end := scalarEnd(e.src, off)
		if tok := string(e.src[off:end]); !nullToken(tok) {
			return fmt.Errorf("line %d: cannot edit the empty value of %q in place", k.Line, k.Value)
		}
		text := flowText(value)
		if e.jsonish(m) {
			text = jsonText(value)
		}
		e.add(off, end-off, text)
		return nil
	}
	// A block mapping: `key:`, maybe a null token, maybe a comment, then the line break.
	keyOff, err := e.offset(k.Line, k.Column)
	if err != nil {
		return err
	}
	i := scalarEnd(e.src, keyOff) // a quoted key; a plain one ends at ": "
	if q := e.src[keyOff]; q != '"' && q != '\'' {
		for i = keyOff; i < len(e.src) && !(e.src[i] == ':' && (i+1 == len(e.src) || strings.ContainsRune(" \t\r\n", rune(e.src[i+1])))); i++ {
		}
	}
	for i < len(e.src) && (e.src[i] == ' ' || e.src[i] == '\t') {
		i++
	}
	if i >= len(e.src) || e.src[i] != ':' {
		return fmt.Errorf("line %d: cannot edit the empty value of %q in place", k.Line, k.Value)
	}
	colon := i + 1
	j := colon
	for j < len(e.src) && (e.src[j] == ' ' || e.src[j] == '\t') {
		j++
	}
	tokStart, tokEnd := j, j
	if j < len(e.src) && e.src[j] != '#' && e.src[j] != '\r' && e.src[j] != '\n' {
		tokEnd = scalarEnd(e.src, j)
		if !nullToken(string(e.src[tokStart:tokEnd])) {
			return fmt.Errorf("line %d: cannot edit the empty value of %q in place", k.Line, k.Value)
		}
	}
	lines := renderPair(k.Value, value, compact)
	head := strings.TrimPrefix(lines[0], scalarText(str(k.Value))+":")
	if len(lines) == 1 { // a scalar or flow value: on the key's line
		if tokEnd > tokStart {
			e.add(tokStart, tokEnd-tokStart, strings.TrimPrefix(head, " "))
		} else {
			e.add(colon, 0, head)
		}
		return nil
	}
	if tokEnd > tokStart {
		e.add(colon, tokEnd-colon, "") // `key: ~` → `key:`
	}
	at := len(e.src)
	if k.Line < len(e.lines) {
		at = e.lines[k.Line]
	} else if len(e.src) > 0 && e.src[len(e.src)-1] != '\n' && !e.finalBreak {
		e.finalBreak = true
		e.addAt(len(e.src), 0, e.nl, math.MaxInt32)
	}
	indent := k.Column - 1
	e.addAt(at, 0, e.block(indent, lines[1:]), indent+2)
	return nil
}

func (e *textEditor) appendItem(s, item *yaml.Node, compact bool) error {
	if isFlow(s) || len(s.Content) == 0 {
		if !isFlow(s) {
			return fmt.Errorf("an empty block sequence")
		}
		at, err := e.flowEnd(s)
		if err != nil {
			return err
		}
		sep := ""
		if len(s.Content) > 0 {
			sep = ", "
		}
		if e.jsonish(s) {
			e.add(at, 0, sep+jsonText(item))
		} else {
			e.add(at, 0, sep+flowText(item))
		}
	} else {
		indent := s.Column - 1 // a block sequence starts at its first "-"
		at, err := e.blockEnd(s, indent)
		if err != nil {
			return err
		}
		e.addAt(at, 0, e.block(indent, renderItem(item, compact)), indent)
	}
	s.Content = append(s.Content, item)
	return nil
}

func (e *textEditor) setInt(n *yaml.Node, v int64) error {
	off, err := e.offset(n.Line, n.Column)
	if err != nil {
		return err
	}
	off = e.skipProperties(off) // !!int 30, &grace 30: the value, its anchor and tag kept
	end := scalarEnd(e.src, off)
	e.add(off, end-off, strconv.FormatInt(v, 10))
	setScalarInt(n, v)
	return nil
}

// block indents lines (rendered at column 0) to indent and ends each with the file's
// line break.
func (e *textEditor) block(indent int, lines []string) string {
	var b strings.Builder
	pad := strings.Repeat(" ", indent)
	for _, l := range lines {
		b.WriteString(pad + l + e.nl)
	}
	return b.String()
}

// blockEnd is the offset just after the last line of block collection n, whose entries
// start at column indent (0-based): the line break of the last non-blank line before a
// line indented less, or as much but not with "-" (a sibling key, the next document).
func (e *textEditor) blockEnd(n *yaml.Node, indent int) (int, error) {
	if at, ok := e.ends[n]; ok {
		return at, nil
	}
	lastContent, last, err := e.lastLine(n) // 1-based
	if err != nil {
		return 0, err
	}
	for l := lastContent + 1; l <= len(e.lines); l++ {
		text := e.line(l)
		trimmed := strings.TrimLeft(text, " ")
		if strings.TrimSpace(trimmed) == "" {
			continue
		}
		ind := len(text) - len(trimmed)
		if strings.HasPrefix(text, "---") || strings.HasPrefix(text, "...") ||
			ind < indent || ind == indent && !strings.HasPrefix(trimmed, "-") {
			break
		}
		lastContent = l
	}
	header, headerAt := e.blockScalarHeader(last)
	if strings.Contains(header, "+") {
		// A block scalar that keeps its trailing line breaks owns the blank lines after
		// its text: insert after them, not between.
		for lastContent < len(e.lines) && strings.TrimSpace(e.line(lastContent+1)) == "" && e.lines[lastContent] < len(e.src) {
			lastContent++
		}
	}
	at := len(e.src)
	if lastContent < len(e.lines) {
		at = e.lines[lastContent] // the start of the next line
	} else if len(e.src) > 0 && e.src[len(e.src)-1] != '\n' && !e.finalBreak {
		e.finalBreak = true // the last line has no line break: give it one, before all else
		e.addAt(len(e.src), 0, e.nl, math.MaxInt32)
		e.strip(header, headerAt)
	}
	e.ends[n] = at
	return at, nil
}

// strip gives the block scalar whose header is header (at headerAt) strip chomping
// (`|-`), where it has none: for a block scalar that runs to the end of a file without a
// final line break (its value has none) when the break is added (with it, the value
// would gain one), strip chomping reads the same value from the new text.
func (e *textEditor) strip(header string, headerAt int) {
	if header == "" || strings.Contains(header, "-") {
		return
	}
	if i := strings.Index(header, "+"); i >= 0 {
		e.add(headerAt+i, 1, "-")
		return
	}
	e.add(headerAt+len(header), 0, "-")
}

// skipProperties moves off, a node's position, past its anchor (&a) and tag (!t), if
// any, to where its value starts.
func (e *textEditor) skipProperties(off int) int {
	for off < len(e.src) && (e.src[off] == '&' || e.src[off] == '!') {
		for off < len(e.src) && !strings.ContainsRune(" \t\r\n", rune(e.src[off])) {
			off++
		}
		for off < len(e.src) && strings.ContainsRune(" \t\r\n", rune(e.src[off])) {
			off++
		}
	}
	return off
}

// blockScalarHeader is the header of n when it is a literal or folded block scalar
// ("|", ">+", "|2-"), and its offset; "" otherwise.
func (e *textEditor) blockScalarHeader(n *yaml.Node) (string, int) {
	if n == nil || n.Kind != yaml.ScalarNode || n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
		return "", 0
	}
	off, err := e.offset(n.Line, n.Column)
	if err != nil {
		return "", 0
	}
	off = e.skipProperties(off)
	if off >= len(e.src) || e.src[off] != '|' && e.src[off] != '>' {
		return "", 0
	}
	end := off + 1
	for end < len(e.src) && strings.ContainsRune("+-0123456789", rune(e.src[end])) {
		end++
	}
	return string(e.src[off:end]), off
}

// lastLine is the line where node n's text ends, as far as positions tell: the line of
// its last scalar, or of the closing bracket of a flow collection; and that last node.
func (e *textEditor) lastLine(n *yaml.Node) (int, *yaml.Node, error) {
	for {
		if n.Line < 1 {
			return 0, nil, fmt.Errorf("a node without a position")
		}
		if (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && isFlow(n) {
			_, closing, err := e.flowBounds(n)
			if err != nil {
				return 0, nil, err
			}
			l, _ := slices.BinarySearch(e.lines, closing+1)
			return l, n, nil
		}
		// The last child that was in the text: edits append children without positions.
		var next *yaml.Node
		for i := len(n.Content) - 1; i >= 0 && next == nil; i-- {
			if n.Content[i].Line > 0 {
				next = n.Content[i]
			}
		}
		if next == nil {
			return n.Line, n, nil
		}
		n = next
	}
}

// line is the text of 1-based line l without its line break.
func (e *textEditor) line(l int) string {
	start := e.lines[l-1]
	end := len(e.src)
	if l < len(e.lines) {
		end = e.lines[l]
	}
	return strings.TrimRight(string(e.src[start:end]), "\r\n")
}

// flowEnd is where an entry goes in flow collection n: just after its last entry (so
// that a pretty-printed JSON object keeps its closing brace on its own line), or just
// after the opening bracket when it is empty.
func (e *textEditor) flowEnd(n *yaml.Node) (int, error) {
	at, _, err := e.flowBounds(n)
	return at, err
}

// flowBounds returns flowEnd and the offset of the closing bracket.
func (e *textEditor) flowBounds(n *yaml.Node) (int, int, error) {
	off, err := e.offset(n.Line, n.Column)
	if err != nil {
		return 0, 0, err
	}
	off = e.skipProperties(off)
	if off >= len(e.src) || e.src[off] != '{' && e.src[off] != '[' {
		return 0, 0, fmt.Errorf("a flow collection that does not start with a bracket")
	}
	depth := 0
	lastContent := off + 1
	for i := off; i < len(e.src); i++ {
		switch c := e.src[i]; c {
		case '{', '[':
			depth++
			lastContent = i + 1
		case '}', ']':
			depth--
			if depth == 0 {
				return lastContent, i, nil
			}
			lastContent = i + 1
		case '"', '\'':
			i = scalarEnd(e.src, i) - 1
			lastContent = i + 1
		case '#':
			if i > 0 && (e.src[i-1] == ' ' || e.src[i-1] == '\t' || e.src[i-1] == '\n') {
				for i < len(e.src) && e.src[i] != '\n' {
					i++
				}
			} else {
				lastContent = i + 1
			}
		case ' ', '\t', '\r', '\n', ',':
			if c == ',' {
				lastContent = i + 1
			}
		default:
			lastContent = i + 1
		}
	}
	return 0, 0, fmt.Errorf("a flow collection without its closing bracket")
}

// scalarEnd is the offset just after the scalar token at off: a quoted string with its
// quotes, or a plain scalar up to a space, comma, bracket or line break.
func scalarEnd(src []byte, off int) int {
	if off >= len(src) {
		return off
	}
	switch q := src[off]; q {
	case '"':
		for i := off + 1; i < len(src); i++ {
			if src[i] == '\\' {
				i++
			} else if src[i] == '"' {
				return i + 1
			}
		}
		return len(src)
	case '\'':
		for i := off + 1; i < len(src); i++ {
			if src[i] == '\'' {
				if i+1 < len(src) && src[i+1] == '\'' {
					i++
					continue
				}
				return i + 1
			}
		}
		return len(src)
	}
	i := off
	for i < len(src) && !strings.ContainsRune(" \t\r\n,]}#", rune(src[i])) {
		i++
	}
	return i
}

// The nodes that edits insert. Scalars carry their tags; strings are quoted in text
// only when a plain scalar would read as something else.

// scalarText is a scalar as YAML text.
func scalarText(n *yaml.Node) string {
	if n.Tag != "!!str" {
		return n.Value
	}
	if plainString(n.Value) {
		return n.Value
	}
	b, _ := json.Marshal(n.Value)
	return string(b)
}

// plainString tells whether s reads back as itself when written plain. Edits write the
// same few names and paths into every template: the answers are remembered (a bounded
// number of them, since a webhook sees delays from pods' annotations).
func plainString(s string) bool {
	plainMu.Lock()
	ok, known := plainMemo[s]
	plainMu.Unlock()
	if known {
		return ok
	}
	var probe any
	ok = plainSafe(s) && yaml.Unmarshal([]byte(s), &probe) == nil
	if v, isStr := probe.(string); !isStr || v != s {
		ok = false
	}
	plainMu.Lock()
	if len(plainMemo) < 1024 {
		plainMemo[s] = ok
	}
	plainMu.Unlock()
	return ok
}

var (
	plainMu   sync.Mutex
	plainMemo = map[string]bool{}
)

func plainSafe(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._-", c)) {
			return false
		}
	}
	return true
}

// jsonText renders n as JSON, which is also YAML flow: what goes into flow collections
// and JSON manifests.
func jsonText(n *yaml.Node) string { return flow(n, jsonScalar) }

func jsonScalar(n *yaml.Node) string {
	switch n.Tag {
	case "!!int":
		v, _ := strconv.ParseInt(n.Value, 0, 64) // "0555" is octal, as YAML reads it
		return strconv.FormatInt(v, 10)
	case "!!bool":
		return n.Value
	}
	b, _ := json.Marshal(n.Value)
	return string(b)
}

// flow renders a collection in flow style, its scalars with scalar.
func flow(n *yaml.Node, scalar func(*yaml.Node) string) string {
	switch n.Kind {
	case yaml.MappingNode:
		parts := make([]string, 0, len(n.Content)/2)
		for i := 0; i < len(n.Content); i += 2 {
			parts = append(parts, scalar(n.Content[i])+": "+flow(n.Content[i+1], scalar))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case yaml.SequenceNode:
		parts := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			parts = append(parts, flow(c, scalar))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return scalar(n)
}

// renderPair renders key: value as block lines at column 0.
func renderPair(key string, v *yaml.Node, compact bool) []string {
	k := scalarText(str(key)) + ":"
	switch {
	case v.Kind == yaml.ScalarNode:
		return []string{k + " " + scalarText(v)}
	case isFlow(v):
		return []string{k + " " + flowText(v)}
	case v.Kind == yaml.MappingNode:
		return append([]string{k}, indentLines(2, renderMapping(v, compact))...)
	default: // block sequence
		ind := 2
		if compact {
			ind = 0
		}
		var lines []string
		for _, item := range v.Content {
			lines = append(lines, renderItem(item, compact)...)
		}
		return append([]string{k}, indentLines(ind, lines)...)
	}
}

func renderMapping(m *yaml.Node, compact bool) []string {
	var lines []string
	for i := 0; i < len(m.Content); i += 2 {
		lines = append(lines, renderPair(m.Content[i].Value, m.Content[i+1], compact)...)
	}
	return lines
}

// renderItem renders one sequence entry, "- " and its value, at column 0.
func renderItem(v *yaml.Node, compact bool) []string {
	var body []string
	switch {
	case v.Kind == yaml.ScalarNode:
		return []string{"- " + scalarText(v)}
	case isFlow(v):
		return []string{"- " + flowText(v)}
	case v.Kind == yaml.MappingNode:
		body = renderMapping(v, compact)
	default:
		for _, item := range v.Content {
			body = append(body, renderItem(item, compact)...)
		}
	}
	out := []string{"- " + body[0]}
	return append(out, indentLines(2, body[1:])...)
}

// flowText is a flow collection in YAML's own flow style: [/nap/nap, 10s].
func flowText(n *yaml.Node) string { return flow(n, scalarText) }

func indentLines(n int, lines []string) []string {
	pad := strings.Repeat(" ", n)
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = pad + l
	}
	return out
}
