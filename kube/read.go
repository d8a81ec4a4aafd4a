package kube

import (
	"bytes"
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
}

// Ref is "Kind/namespace/name", or "Kind/name" without a namespace.
func (o *Object) Ref() string {
	if o.Namespace == "" {
		return o.Kind + "/" + o.Name
	}
	return o.Kind + "/" + o.Namespace + "/" + o.Name
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

// Read reads the objects of one manifest: YAML (one or more documents) or JSON, with
// kind: List expanded into its items. One decoder reads the whole stream, so lines
// count from the top of the file.
func Read(file string, data []byte) ([]*Object, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var objs []*Object
	for {
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
			return nil, &ReadError{File: file, Line: line, Err: fmt.Errorf("invalid YAML or JSON: %s", msg)}
		}
		if len(doc.Content) == 0 {
			continue // an empty document
		}
		if err := add(&objs, file, yaml.NewRNode(doc.Content[0])); err != nil {
			return nil, err
		}
	}
}

func add(objs *[]*Object, file string, n *yaml.RNode) error {
	if n.IsNilOrEmpty() {
		return nil
	}
	line := n.YNode().Line
	if n.YNode().Kind != yaml.MappingNode {
		return &ReadError{File: file, Line: line, Err: fmt.Errorf("a document is not an object")}
	}
	meta, _ := n.GetMeta()
	o := &Object{File: file, Line: line, Node: n, APIVersion: meta.APIVersion, Kind: meta.Kind, Namespace: meta.Namespace, Name: meta.Name}
	if o.Kind == "" {
		return &ReadError{File: file, Line: line, Err: fmt.Errorf("object without kind")}
	}
	if strings.HasSuffix(o.Kind, "List") {
		items, err := n.Pipe(yaml.Lookup("items"))
		if err != nil {
			return &ReadError{File: file, Line: line, Err: err}
		}
		if items != nil {
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
}

// ReadFiles reads the manifests named by paths: files, directories (their .yaml, .yml
// and .json files, recursively, in lexical order) and "-" for stdin.
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
				err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
					if err != nil {
						return err
					}
					switch filepath.Ext(path) {
					case ".yaml", ".yml", ".json":
						if !d.IsDir() {
							files = append(files, path)
						}
					}
					return nil
				})
				if err != nil {
					return nil, &ReadError{File: p, Err: err}
				}
				slices.Sort(files)
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
			if err != nil {
				return nil, &ReadError{File: f, Err: err}
			}
			out = append(out, File{Name: f, Data: data})
		}
	}
	return out, nil
}

// ReadPaths reads the objects of every manifest named by paths (see ReadFiles).
func ReadPaths(paths []string, stdin io.Reader) ([]*Object, error) {
	files, err := ReadFiles(paths, stdin)
	if err != nil {
		return nil, err
	}
	var objs []*Object
	for _, f := range files {
		o, err := Read(f.Name, f.Data)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o...)
	}
	return objs, nil
}
