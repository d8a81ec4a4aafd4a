package inject

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/nap-k8s/nap/manifest"
)

// Note is something Inject tells the user about the input without failing: a Job it
// skipped, a preStop it left alone, an architecture it had to guess.
type Note struct {
	File string
	Line int
	Msg  string
}

func (n Note) String() string { return fmt.Sprintf("%s:%d: %s", n.File, n.Line, n.Msg) }

// Inject adds the plan's preStop delay to every pod template in one manifest and
// returns the manifest with nothing else changed. Objects it cannot or should not
// change are left as they are, with a note.
func Inject(file string, src []byte, p Plan) ([]byte, []Note, error) {
	parts, notes, err := Parts(file, src, p)
	if err != nil || len(parts) == 1 {
		return parts.first(), notes, err
	}
	return bytes.Join(parts, nil), notes, nil
}

// EndLine is src with a line break at its end where it has none, changing no value: a
// block scalar that runs to the end (its value has no final line break) gets strip
// chomping (`|-`), as Inject gives it when it appends to such a file. It is how
// manifests are joined into one stream (a file, "---", the next file). src that does
// not read as YAML gets the line break alone.
func EndLine(src []byte) []byte {
	if len(src) == 0 || src[len(src)-1] == '\n' {
		return src
	}
	e := newEditor(src)
	e.addAt(len(src), 0, e.nl, math.MaxInt32)
	before, err := documents(src)
	if err == nil && len(before) > 0 {
		if _, last, err := e.lastLine(before[len(before)-1]); err == nil {
			e.strip(e.blockScalarHeader(last))
		}
	}
	out := e.apply()
	if after, err := documents(out); err == nil && len(after) == len(before) {
		for i := range after {
			if !sameTree(after[i], before[i]) {
				return append(slices.Clip(src), e.nl...) // not a layout it knows: the break alone
			}
		}
	}
	return out
}

// documents are the YAML documents of src, as trees.
func documents(src []byte) ([]*yaml.Node, error) {
	var out []*yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	for {
		var n yaml.Node
		switch err := dec.Decode(&n); {
		case errors.Is(err, io.EOF):
			return out, nil
		case err != nil:
			return nil, err
		}
		out = append(out, &n)
	}
}

// Output is a manifest as Parts returns it: pieces to write in order.
type Output [][]byte

// Len is how many bytes the pieces hold.
func (o Output) Len() int {
	n := 0
	for _, b := range o {
		n += len(b)
	}
	return n
}

func (o Output) first() []byte {
	if len(o) == 0 {
		return nil
	}
	return o[0]
}

// Parts is Inject with the output in pieces, each document's own: an unchanged
// document is the input's bytes, not a copy. It reads, edits and checks one document
// at a time (manifest.Documents), so that beyond the input it holds only the changed
// documents' text and one document's tree. Where a document cannot be done on its own,
// the whole manifest is done at once, which names the error as reading it whole does.
func Parts(file string, src []byte, p Plan) (Output, []Note, error) {
	spans := manifest.Documents(src)
	if len(spans) == 1 {
		b, notes, err := injectWhole(file, src, p)
		if err != nil {
			return nil, nil, err
		}
		return Output{b}, notes, nil
	}
	var notes []Note
	out := make(Output, 0, len(spans))
	before := 0
	if p.objects != nil {
		before = *p.objects
	}
	for _, s := range spans {
		b, n, err := injectWhole(file, src[s.Start:s.End], p)
		if err != nil {
			if p.objects != nil {
				*p.objects = before // read whole: the spans read so far count again
			}
			b, notes, err := injectWhole(file, src, p)
			if err != nil {
				return nil, nil, err
			}
			return Output{b}, notes, nil
		}
		for i := range n {
			n[i].Line += s.Line - 1
		}
		notes = append(notes, n...)
		out = append(out, b)
	}
	return out, notes, nil
}

// injectWhole is Inject on src read whole: one document, or all of them when one
// cannot be done alone.
func injectWhole(file string, src []byte, p Plan) ([]byte, []Note, error) {
	objs, err := manifest.Read(file, src)
	if err != nil {
		return nil, nil, err
	}
	if p.objects != nil {
		*p.objects += len(objs)
	}
	e := newEditor(src)
	var notes []Note
	for _, o := range objs {
		n, err := p.injectObject(e, o)
		notes = append(notes, n...)
		if err != nil {
			line, at := o.Line, o
			var le *lineError
			if errors.As(err, &le) {
				// The line may be in another object (an alias to o's containers): name it.
				line, err, at = le.line, le.err, objectAt(objs, le.line)
			}
			return nil, nil, &manifest.ReadError{File: file, Line: line, Err: fmt.Errorf("%s: %w", at.Ref(), err)}
		}
	}
	if len(e.edits) == 0 {
		return src, notes, nil
	}
	out := e.apply()
	if err := verify(file, out, objs); err != nil {
		return nil, nil, err
	}
	return out, notes, nil
}

// objectAt is the object of objs (in the order of their lines) that line is in.
func objectAt(objs []*manifest.Object, line int) *manifest.Object {
	at := objs[0]
	for _, o := range objs {
		if o.Line <= line {
			at = o
		}
	}
	return at
}

// Op is one JSON Patch (RFC 6902) operation, as Patch returns them.
type Op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// Patch injects p into one object that is already decoded, such as a pod an API server
// sends to the webhook: there is no text to keep, so it edits the tree alone (no
// splicing, no re-reading to verify) and returns the edits as JSON Patch operations on
// the object, with the same decisions and notes as Inject. No operations: nothing to add.
func Patch(o *manifest.Object, p Plan) ([]Op, []Note, error) {
	e := newTreeEditor(o.Node.YNode())
	notes, err := p.injectObject(e, o)
	if err != nil {
		var le *lineError
		if errors.As(err, &le) {
			err = le.err
		}
		return nil, nil, &manifest.ReadError{File: o.File, Line: o.Line, Err: fmt.Errorf("%s: %w", o.Ref(), err)}
	}
	return e.ops, notes, nil
}

// lineError is an error at a line of its own, not the object's.
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return e.err.Error() }

// verify checks that the edited text reads as the edited trees: the splicing changed
// what it meant to, and nothing else.
func verify(file string, out []byte, want []*manifest.Object) error {
	got, err := manifest.Read(file, out)
	if err != nil {
		return fmt.Errorf("nap made invalid YAML of %s (please report this): %w", file, err)
	}
	if len(got) != len(want) {
		return fmt.Errorf("nap changed the number of objects in %s (please report this)", file)
	}
	for i := range got {
		if !sameTree(got[i].Node.YNode(), want[i].Node.YNode()) {
			return &manifest.ReadError{File: file, Line: want[i].Line, Err: fmt.Errorf("%s: cannot edit this layout in place (please report it)", want[i].Ref())}
		}
	}
	return nil
}

// sameTree tells whether two trees hold the same: the same kinds of node, tags and
// scalar values (0555 is 365), in the same order, aliases compared by what they stand
// for. Layout, style and comments are not compared (a scalar's style only through its
// tag), nor what an object nap does not edit would mean to Kubernetes.
func sameTree(a, b *yaml.Node) bool {
	return sameNodes(a, b, map[[2]*yaml.Node]bool{})
}

// sameNodes is sameTree, each pair of nodes that aliases reach compared once (done), so
// that many aliases to one anchor cost as the anchor does.
func sameNodes(a, b *yaml.Node, done map[[2]*yaml.Node]bool) bool {
	aliased := false
	for a.Kind == yaml.AliasNode && a.Alias != nil {
		a, aliased = a.Alias, true
	}
	for b.Kind == yaml.AliasNode && b.Alias != nil {
		b, aliased = b.Alias, true
	}
	if aliased {
		if done[[2]*yaml.Node{a, b}] {
			return true
		}
		done[[2]*yaml.Node{a, b}] = true
	}
	if a.Kind != b.Kind || a.ShortTag() != b.ShortTag() || len(a.Content) != len(b.Content) {
		return false
	}
	if a.Kind == yaml.ScalarNode && a.Value != b.Value && !sameScalar(a, b) {
		return false
	}
	for i := range a.Content {
		if !sameNodes(a.Content[i], b.Content[i], done) {
			return false
		}
	}
	return true
}
