package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Object is one Kubernetes object read from a manifest.
type Object struct {
	File       string // the path it was read from; "-" for stdin
	Line       int    // 1-based line where the object starts
	Node       *yaml.RNode
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	// shared are the nodes of its document that an alias stands for too, with all they
	// hold, each with the line of (one) alias: editing one edits every place that
	// refers to it. nil: none.
	shared map[*yaml.Node]int
}

// SharedBy tells whether n, a node of o's document, is also what an alias stands for
// (or lies inside such a node), and the line of that alias: an edit of n would change
// every place that refers to it.
func (o *Object) SharedBy(n *yaml.Node) (aliasLine int, shared bool) {
	aliasLine, shared = o.shared[n]
	return aliasLine, shared
}

// Ref is "Kind/namespace/name", or "Kind/name" without a namespace. An object without
// a name is named by its generateName ("web-*"), else "(no name)".
func (o *Object) Ref() string {
	name := o.Name
	if name == "" {
		name = "(no name)"
		if g, _ := o.Node.Pipe(yaml.Lookup("metadata", "generateName")); g != nil && g.YNode().Value != "" {
			name = g.YNode().Value + "*"
		}
	}
	if o.Namespace == "" {
		return o.Kind + "/" + name
	}
	return o.Kind + "/" + o.Namespace + "/" + name
}

// ReadError is a manifest that cannot be read, at file:line when the line is known.
type ReadError struct {
	File string
	Line int
	Err  error
}

func (e *ReadError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *ReadError) Unwrap() error { return e.Err }

var yamlLine = regexp.MustCompile(`line (\d+)`)

// Read reads the objects of one manifest: YAML (one or more documents), JSON, or a
// stream of concatenated JSON objects (as kubectl accepts), with kind: List expanded
// into its items. One decoder reads the whole stream, so lines count from the top of
// the file. What Kubernetes would not read the same way is an error naming its line: a
// duplicate key, an alias to an anchor of another document.
func Read(file string, data []byte) ([]*Object, error) {
	if segs := jsonStream(data); len(segs) > 1 {
		return readSegments(file, data, segs)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var objs []*Object
	for decoded := 0; ; decoded++ {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			line := 0
			msg := err.Error()
			if m := yamlLine.FindStringSubmatch(msg); m != nil {
				line, _ = strconv.Atoi(m[1])
				msg = msg[strings.Index(msg, m[0])+len(m[0]):]
			}
			msg = strings.TrimPrefix(strings.TrimPrefix(msg, "yaml: "), ": ")
			if l, what := locate(data); l > 0 {
				line, msg = l, what+" ("+msg+")"
			} else {
				// The later of the two: yaml.v3's falls a line short where a node is at
				// fault, problemLine's where a flow collection left open began earlier.
				line = max(line, problemLine(data, decoded))
			}
			return nil, &ReadError{File: file, Line: line, Err: fmt.Errorf("invalid YAML or JSON: %s", msg)}
		}
		if len(doc.Content) == 0 {
			continue // an empty document
		}
		shared, derr := checkDocument(doc.Content[0])
		if derr != nil {
			return nil, &ReadError{File: file, Line: derr.line, Err: derr}
		}
		first := len(objs)
		if err := add(&objs, file, yaml.NewRNode(doc.Content[0])); err != nil {
			return nil, err
		}
		for _, o := range objs[first:] {
			o.shared = shared
		}
	}
}

// docError is what checkDocument finds, at its line.
type docError struct {
	line int
	msg  string
}

func (e *docError) Error() string { return e.msg }

// checkDocument walks one document in text order: a mapping key given twice (which
// Kubernetes' decoder rejects or resolves differently), and an alias whose anchor is
// not in this document (each document is read on its own by kubectl), are errors. It
// returns the nodes that aliases stand for, with everything they hold (nil: none).
func checkDocument(root *yaml.Node) (map[*yaml.Node]int, *docError) {
	anchors := map[*yaml.Node]bool{}
	var targets []*yaml.Node // the aliases
	var walk func(n *yaml.Node) *docError
	walk = func(n *yaml.Node) *docError {
		if n.Anchor != "" {
			anchors[n] = true
		}
		switch n.Kind {
		case yaml.AliasNode:
			if !anchors[n.Alias] {
				return &docError{line: n.Line, msg: fmt.Sprintf("alias *%s refers to an anchor of another document", n.Value)}
			}
			targets = append(targets, n)
			return nil
		case yaml.MappingNode:
			seen := make(map[string]int, len(n.Content)/2)
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if k.Kind == yaml.ScalarNode && k.Value != "<<" {
					if at, dup := seen[k.Value]; dup {
						return &docError{line: k.Line, msg: fmt.Sprintf("mapping key %q already defined at line %d", k.Value, at)}
					}
					seen[k.Value] = k.Line
				}
			}
		}
		for _, c := range n.Content {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root); err != nil {
		return nil, err
	}
	if len(targets) == 0 {
		return nil, nil
	}
	shared := map[*yaml.Node]int{}
	var mark func(n *yaml.Node, alias int)
	mark = func(n *yaml.Node, alias int) {
		if _, done := shared[n]; done {
			return
		}
		shared[n] = alias
		for _, c := range n.Content {
			mark(c, alias)
		}
	}
	for _, a := range targets {
		mark(a.Alias, a.Line)
	}
	return shared, nil
}

// maxProblemParses and maxProblemBytes bound problemLine's work: the prefixes of a
// document it parses, and the bytes they add up to at the most.
const (
	maxProblemParses = 2000
	maxProblemBytes  = 64 << 20
)

// problemLine is the line of the YAML error in document number doc of data (counted as
// the decoder counts them): the line after the longest prefix of the document that
// still parses (for a flow collection left open, the line it begins on). yaml.v3 names
// the line before the one at fault (its context mark, which counts from 0, and is where
// the enclosing node began), or none (an unknown alias). 0 where it cannot tell (a
// document over maxProblemParses lines or maxProblemBytes of prefixes).
func problemLine(data []byte, doc int) int {
	spans := Documents(data)
	sp := spans[min(doc, len(spans)-1)] // documents the cut did not part (JSON values side by side) are the last span's
	text := data[sp.Start:sp.End]
	var ends []int // the offset after each line
	for off := 0; off < len(text); {
		i := bytes.IndexByte(text[off:], '\n')
		if i < 0 {
			off = len(text)
		} else {
			off += i + 1
		}
		ends = append(ends, off)
	}
	if len(ends) > maxProblemParses || len(ends)*len(text) > maxProblemBytes {
		return 0
	}
	for k := len(ends) - 1; k >= 0; k-- {
		prefix := []byte(nil)
		if k > 0 {
			prefix = text[:ends[k-1]]
		}
		if parses(prefix) {
			return sp.Line + k
		}
	}
	return 0
}

// parses tells whether text reads as YAML, every document of it.
func parses(text []byte) bool {
	dec := yaml.NewDecoder(bytes.NewReader(text))
	for {
		var n yaml.Node
		switch err := dec.Decode(&n); {
		case errors.Is(err, io.EOF):
			return true
		case err != nil:
			return false
		}
	}
}

// locate finds where a YAML error without a position lies: the first byte that is not
// UTF-8, or the first control character YAML does not allow.
func locate(data []byte) (int, string) {
	for off := 0; off < len(data); {
		r, n := utf8.DecodeRune(data[off:])
		switch {
		case r == utf8.RuneError && n <= 1:
			return 1 + bytes.Count(data[:off], []byte("\n")), fmt.Sprintf("byte %d (0x%02x) is not UTF-8", off, data[off])
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f:
			return 1 + bytes.Count(data[:off], []byte("\n")), fmt.Sprintf("byte %d is control character %U", off, r)
		}
		off += n
	}
	return 0, ""
}

// jsonStream splits data into the offsets of concatenated JSON values, when it is such
// a stream; nil otherwise (YAML, or JSON that is not strict).
func jsonStream(data []byte) [][2]int {
	t := bytes.TrimLeft(data, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var segs [][2]int
	for {
		start := int(dec.InputOffset())
		var v json.RawMessage
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			return segs
		} else if err != nil {
			return nil
		}
		end := int(dec.InputOffset())
		start += len(data[start:end]) - len(bytes.TrimLeft(data[start:end], " \t\r\n"))
		segs = append(segs, [2]int{start, end})
	}
}

// readSegments reads each JSON value of a stream on its own, with positions as in data.
func readSegments(file string, data []byte, segs [][2]int) ([]*Object, error) {
	var objs []*Object
	for _, seg := range segs {
		line := 1 + bytes.Count(data[:seg[0]], []byte("\n"))
		col := 1 + utf8.RuneCount(data[bytes.LastIndexByte(data[:seg[0]], '\n')+1:seg[0]])
		part, err := Read(file, data[seg[0]:seg[1]])
		if err != nil {
			var re *ReadError
			if errors.As(err, &re) && re.Line > 0 {
				re.Line += line - 1
			}
			return nil, err
		}
		shifted := map[*yaml.Node]bool{}
		for _, o := range part {
			shift(o.Node.YNode(), line, col, shifted)
			o.Line += line - 1
		}
		objs = append(objs, part...)
	}
	return objs, nil
}

// shift moves the positions of n and what it holds from a segment's own to the file's:
// the segment starts at line, col.
func shift(n *yaml.Node, line, col int, done map[*yaml.Node]bool) {
	if done[n] {
		return
	}
	done[n] = true
	if n.Line == 1 {
		n.Column += col - 1
	}
	n.Line += line - 1
	for _, c := range n.Content {
		shift(c, line, col, done)
	}
}

// readMeta sets o's apiVersion, kind, namespace and name from mapping n, in one pass
// over n and one over its metadata: kyaml's GetMeta looks each field up anew, which is
// quadratic in a mapping's keys (10,000 annotations took 0.37 s a pod).
func readMeta(o *Object, n *yaml.Node) {
	scalar := func(v *yaml.Node) string {
		if v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		if v.Kind != yaml.ScalarNode || v.Tag == yaml.NodeTagNull {
			return ""
		}
		return v.Value
	}
	// The first of a key counts, as for kyaml's lookups.
	field := func(n *yaml.Node, keys ...string) []*yaml.Node {
		out := make([]*yaml.Node, len(keys))
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := slices.Index(keys, n.Content[i].Value); k >= 0 && out[k] == nil {
				out[k] = n.Content[i+1]
			}
		}
		return out
	}
	value := func(v *yaml.Node) string {
		if v == nil {
			return ""
		}
		return scalar(v)
	}
	top := field(n, "apiVersion", "kind", "metadata")
	o.APIVersion, o.Kind = value(top[0]), value(top[1])
	meta := top[2]
	if meta != nil && meta.Kind == yaml.AliasNode && meta.Alias != nil {
		meta = meta.Alias
	}
	if meta == nil || meta.Kind != yaml.MappingNode {
		return
	}
	m := field(meta, "name", "namespace")
	o.Name, o.Namespace = value(m[0]), value(m[1])
}

func add(objs *[]*Object, file string, n *yaml.RNode) error {
	if n.IsNilOrEmpty() {
		return nil
	}
	line := n.YNode().Line
	if n.YNode().Kind != yaml.MappingNode {
		return &ReadError{File: file, Line: line, Err: errNotObject}
	}
	o := &Object{File: file, Line: line, Node: n}
	readMeta(o, n.YNode())
	if o.Kind == "" {
		return &ReadError{File: file, Line: line, Err: errNoKind}
	}
	if strings.HasSuffix(o.Kind, "List") {
		items, err := n.Pipe(yaml.Lookup("items"))
		if err != nil {
			return &ReadError{File: file, Line: line, Err: err}
		}
		if items != nil && items.YNode().Kind == yaml.AliasNode && items.YNode().Alias != nil {
			// items: *x. The objects are what the anchor holds, which the alias shares:
			// they read as they are, and an edit of one is refused (SharedBy).
			items = yaml.NewRNode(items.YNode().Alias)
		}
		if items != nil {
			if y := items.YNode(); y.Kind != yaml.SequenceNode && y.Tag != "!!null" {
				return &ReadError{File: file, Line: y.Line, Err: fmt.Errorf("%s items: not a list", o.Kind)}
			}
			elems, _ := items.Elements()
			for _, item := range elems {
				if err := add(objs, file, item); err != nil {
					return err
				}
			}
		}
		return nil
	}
	*objs = append(*objs, o)
	return nil
}

// File is one manifest's name and bytes.
type File struct {
	Name string // the path; "-" for stdin
	Data []byte
	// Folder is the folder named on the command line that the file was found in; "" for
	// a file named itself (or stdin).
	Folder string
	// Encoding is what Data was read from: Data is UTF-8 text, and FromUTF8 writes it
	// back in the file's own encoding.
	Encoding Encoding
	// skip is why a path found in a folder is not read (a hidden folder, a Helm chart, a
	// FIFO), or the error reading it gave: Skip returns it.
	skip *Skipped
}

// What a document that is no Kubernetes object is refused with.
var (
	errNotObject = errors.New("a document is not an object")
	errNoKind    = errors.New("object without kind")
)

// Skip tells whether a file found in a folder is not to be read as manifests, and why,
// given the error reading it gave (nil before reading): a kustomization or a Helm
// chart's file, with the command that renders them, or a file whose documents are no
// Kubernetes objects (a dashboard's JSON). A file named itself is always read, and its
// errors are errors.
//
// A file found in a folder that cannot be read at all (a dangling link, a JSON file with
// comments, broken YAML) does not stop the others either: it is skipped with the error
// (Skipped.Err), and the command fails at the end, as kubectl apply -f does with a
// folder.
func (f File) Skip(readErr error) (Skipped, bool) {
	if f.Folder == "" {
		return Skipped{}, false
	}
	if f.skip != nil {
		return *f.skip, true
	}
	s := Skipped{File: f.Name}
	switch base := filepath.Base(f.Name); {
	case base == "kustomization.yaml" || base == "kustomization.yml":
		s.Why, s.Render = "a kustomization, not manifests", "kustomize build "+filepath.Dir(f.Name)
	case errors.Is(readErr, errNoKind):
		s.Why = "not Kubernetes objects (" + errNoKind.Error() + ")"
	case errors.Is(readErr, errNotObject):
		s.Why = "not Kubernetes objects (" + errNotObject.Error() + ")"
	case readErr != nil:
		s.Err = readErr
	}
	return s, s.Why != "" || s.Err != nil
}

// unreadable is path, found in folder root, that could not be read (err): skipped with
// the error, which fails the command once the others are done.
func unreadable(root, path string, err error) File {
	return File{Name: path, Folder: root, skip: &Skipped{File: path, Err: &ReadError{File: path, Err: err}}}
}

// found is what a folder's walk makes of path: a file to read, or one skipped, and
// whether the walk goes into it (a folder). A hidden folder (.git, .vscode) and a Helm
// chart (a folder with a Chart.yaml) are said once and not entered; only regular files
// (or links to them) are read, so that a FIFO is never opened (it would wait for a
// writer).
func found(root, path string, d fs.DirEntry) (f *File, enter bool) {
	skip := func(why, render string) *File {
		return &File{Name: path, Folder: root, skip: &Skipped{File: path, Why: why, Render: render}}
	}
	if d.IsDir() {
		if path != root && strings.HasPrefix(d.Name(), ".") {
			return skip("a hidden folder, not read", ""), false
		}
		if _, err := os.Stat(filepath.Join(path, "Chart.yaml")); err == nil {
			return skip("a Helm chart, not manifests", "helm template "+path), false
		}
		return nil, true
	}
	switch filepath.Ext(path) {
	case ".yaml", ".yml", ".json":
	default:
		return nil, false
	}
	mode := d.Type()
	if mode&fs.ModeSymlink != 0 {
		fi, err := os.Stat(path)
		if err != nil {
			f := unreadable(root, path, err)
			return &f, false
		}
		mode = fi.Mode().Type()
	}
	if !mode.IsRegular() {
		what := "a device"
		switch {
		case mode&fs.ModeNamedPipe != 0:
			what = "a named pipe"
		case mode&fs.ModeSocket != 0:
			what = "a socket"
		}
		return skip("not a regular file ("+what+")", ""), false
	}
	return &File{Name: path, Folder: root}, false
}

// ReadFiles reads the manifests named by paths: files, directories (their .yaml, .yml
// and .json files, recursively, in lexical order) and "-" for stdin; UTF-16 text (with
// its byte-order mark) as UTF-8, its encoding kept.
func ReadFiles(paths []string, stdin io.Reader) ([]File, error) {
	var out []File
	for _, p := range paths {
		files := []string{p}
		if p != "-" {
			fi, err := os.Stat(p)
			if err != nil {
				return nil, &ReadError{File: p, Err: err}
			}
			if fi.IsDir() {
				files = nil
				var skipped []File
				err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
					if err != nil {
						if path == p {
							return err
						}
						// A folder or file below it that cannot be read: said, and the others
						// read (SkipDir on a file would skip the rest of its folder).
						skipped = append(skipped, unreadable(p, path, err))
						if d != nil && d.IsDir() {
							return fs.SkipDir
						}
						return nil
					}
					f, enter := found(p, path, d)
					switch {
					case f != nil && f.skip != nil:
						skipped = append(skipped, *f)
					case f != nil:
						files = append(files, path)
					}
					if d.IsDir() && !enter {
						return fs.SkipDir
					}
					return nil
				})
				if err != nil {
					return nil, &ReadError{File: p, Err: err}
				}
				slices.Sort(files)
				out = append(out, skipped...)
			}
		}
		for _, f := range files {
			var data []byte
			var err error
			if f == "-" {
				data, err = io.ReadAll(stdin)
			} else {
				data, err = os.ReadFile(f)
			}
			if err == nil {
				var text []byte
				var enc Encoding
				if text, enc, err = ToUTF8(data); err == nil {
					file := File{Name: f, Data: text, Encoding: enc}
					if f != p {
						file.Folder = p
					}
					out = append(out, file)
					continue
				}
			}
			if f == p {
				return nil, &ReadError{File: f, Err: err}
			}
			out = append(out, unreadable(p, f, err))
		}
	}
	return out, nil
}

// ReadPaths reads the objects of every manifest named by paths (see ReadFiles), and
// says which files found in folders it did not read, and why (File.Skip).
func ReadPaths(paths []string, stdin io.Reader) ([]*Object, []Skipped, error) {
	files, err := ReadFiles(paths, stdin)
	if err != nil {
		return nil, nil, err
	}
	var objs []*Object
	var skipped []Skipped
	for _, f := range files {
		if sk, ok := f.Skip(nil); ok {
			skipped = append(skipped, sk)
			continue
		}
		o, err := Read(f.Name, f.Data)
		if sk, ok := f.Skip(err); err != nil && ok {
			skipped = append(skipped, sk)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		objs = append(objs, o...)
	}
	return objs, skipped, nil
}

// Skipped is a file found in a folder that was not read as manifests, why, and the
// command that renders it into manifests, if one does; or, with Err, a file that could
// not be read, which fails the command once the others are done.
type Skipped struct {
	File, Why, Render string
	Err               error
}

// Note is what a command says of s: cmd is how to read the rendered manifests
// ("napctl lint -f -").
func (s Skipped) Note(cmd string) string {
	if s.Err != nil {
		return s.Err.Error() + " (not read; the other files were)"
	}
	if s.Render == "" {
		return s.File + ": skipped: " + s.Why
	}
	return s.File + ": skipped: " + s.Why + "; render it first: " + s.Render + " | " + cmd
}

// Span is one document of a manifest: the bytes data[Start:End], which start at Line.
type Span struct {
	Start, End, Line int
}

// Documents cuts data into spans that each hold one document and together hold every
// byte, in order, so that a manifest can be read and edited one document at a time in
// memory that does not grow with the whole input. YAML is cut before each line that
// starts a document ("---" at the start of a line, which YAML forbids inside any
// scalar); a stream of concatenated JSON values before each value. Reading a span on
// its own gives what reading the whole gives for that document, except where the
// whole would fail (an alias to another document's anchor): a caller whose span fails
// reads the whole to name the error as Read does.
func Documents(data []byte) []Span {
	if segs := jsonStream(data); len(segs) > 1 {
		spans := make([]Span, len(segs))
		for i, seg := range segs {
			start, end := seg[0], len(data)
			if i == 0 {
				start = 0
			}
			if i+1 < len(segs) {
				end = segs[i+1][0]
			}
			spans[i] = Span{Start: start, End: end, Line: 1 + bytes.Count(data[:start], []byte("\n"))}
		}
		return spans
	}
	var spans []Span
	start, line := 0, 1
	for off, n := 0, 1; off < len(data); n++ {
		next := len(data)
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			next = off + i + 1
		}
		if off > start && isDocumentStart(data[off:next]) {
			spans = append(spans, Span{Start: start, End: off, Line: line})
			start, line = off, n
		}
		off = next
	}
	return append(spans, Span{Start: start, End: len(data), Line: line})
}

// isDocumentStart: a line that is YAML's document start marker, "---" alone or followed
// by a space (and the document's first node).
func isDocumentStart(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("---")) {
		return false
	}
	if len(line) == 3 {
		return true
	}
	switch line[3] {
	case ' ', '\t', '\r', '\n':
		return true
	}
	return false
}
