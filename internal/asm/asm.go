package asm

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
)

// Label names a position in a program.
type Label string

// Inst is one encoded instruction (or datum).
type Inst struct {
	Text  string // assembly text, for listings and errors
	Bytes []byte // the encoding, when Ref is empty
	Ref   Label  // the label that the encoding depends on, if any
	Forms []Form // encodings of a label-relative instruction, shortest first
}

// Form is one encoding of a label-relative instruction. Encode gets the address of the
// instruction and of its label and fails when the label is out of the form's range.
type Form struct {
	Size   int
	Encode func(pc, target uint64) ([]byte, error)
}

// Pos is the source position of the program line that added an item.
type Pos struct {
	File string
	Line int
}

func (p Pos) String() string { return fmt.Sprintf("%s:%d", filepath.Base(p.File), p.Line) }

// Error is an assembly error at a program line.
type Error struct {
	Pos  Pos
	Text string
	Err  error
}

func (e *Error) Error() string {
	if e.Text == "" {
		return fmt.Sprintf("%s: %v", e.Pos, e.Err)
	}
	return fmt.Sprintf("%s: %s: %v", e.Pos, e.Text, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

type item struct {
	inst  Inst
	label Label // a label definition when non-empty
	pos   Pos
}

// Program is a sequence of instructions, data and labels.
type Program struct {
	items  []item
	labels map[Label]int // label -> index of its item
	errs   []error
}

// Program's methods are meant to be called by an architecture's Builder, one method per
// instruction: the position they record is that of the Builder method's caller, the line
// of the program.

// Emit adds an instruction made by an encoder, or records the encoder's error.
func (p *Program) Emit(inst Inst, err error) {
	pos := caller(3)
	if err != nil {
		p.errs = append(p.errs, &Error{Pos: pos, Text: inst.Text, Err: err})
		return
	}
	p.items = append(p.items, item{inst: inst, pos: pos})
}

// Label defines l at the current position.
func (p *Program) Label(l Label) {
	pos := caller(3)
	if p.labels == nil {
		p.labels = map[Label]int{}
	}
	if _, dup := p.labels[l]; dup || l == "" {
		p.errs = append(p.errs, &Error{Pos: pos, Text: string(l), Err: errors.New("label defined twice or empty")})
		return
	}
	p.labels[l] = len(p.items)
	p.items = append(p.items, item{label: l, pos: pos})
}

// Data adds raw bytes, such as a string.
func (p *Program) Data(text string, b []byte) {
	p.items = append(p.items, item{inst: Inst{Text: text, Bytes: b}, pos: caller(3)})
}

func caller(skip int) Pos {
	_, file, line, _ := runtime.Caller(skip)
	return Pos{File: file, Line: line}
}

// Line is one assembled item, for listings.
type Line struct {
	Addr  uint64
	Bytes []byte
	Text  string
	Label Label // set on label lines, which have no bytes
	Pos   Pos
}

// Object is an assembled program.
type Object struct {
	Base   uint64
	Code   []byte
	Labels map[Label]uint64
	Lines  []Line
}

// Assemble lays the program out at base. It returns every error the program recorded,
// each with its position, or the assembled object.
func (p *Program) Assemble(base uint64) (*Object, error) {
	errs := append([]error(nil), p.errs...)
	for _, it := range p.items {
		if it.inst.Ref == "" {
			continue
		}
		if _, ok := p.labels[it.inst.Ref]; !ok {
			errs = append(errs, &Error{Pos: it.pos, Text: it.inst.Text, Err: fmt.Errorf("undefined label %q", it.inst.Ref)})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	// Relaxation: start every label-relative instruction in its shortest form and grow
	// the ones whose target is out of range until nothing changes. Forms only grow, so
	// this ends.
	form := make([]int, len(p.items))
	addr := make([]uint64, len(p.items)+1)
	for {
		a := base
		for i, it := range p.items {
			addr[i] = a
			if it.inst.Ref != "" {
				a += uint64(it.inst.Forms[form[i]].Size)
			} else {
				a += uint64(len(it.inst.Bytes))
			}
		}
		addr[len(p.items)] = a
		grown := false
		for i, it := range p.items {
			if it.inst.Ref == "" {
				continue
			}
			target := addr[p.labels[it.inst.Ref]]
			if _, err := it.inst.Forms[form[i]].Encode(addr[i], target); err != nil {
				if form[i]+1 == len(it.inst.Forms) {
					errs = append(errs, &Error{Pos: it.pos, Text: it.inst.Text, Err: err})
					continue
				}
				form[i]++
				grown = true
			}
		}
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		if !grown {
			break
		}
	}

	obj := &Object{Base: base, Labels: map[Label]uint64{}}
	for l, i := range p.labels {
		obj.Labels[l] = addr[i]
	}
	for i, it := range p.items {
		b := it.inst.Bytes
		if it.inst.Ref != "" {
			f := it.inst.Forms[form[i]]
			var err error
			b, err = f.Encode(addr[i], addr[p.labels[it.inst.Ref]])
			if err == nil && len(b) != f.Size {
				err = fmt.Errorf("encoder wrote %d bytes for a %d-byte form", len(b), f.Size)
			}
			if err != nil {
				return nil, &Error{Pos: it.pos, Text: it.inst.Text, Err: err}
			}
		}
		obj.Code = append(obj.Code, b...)
		obj.Lines = append(obj.Lines, Line{Addr: addr[i], Bytes: b, Text: it.inst.Text, Label: it.label, Pos: it.pos})
	}
	return obj, nil
}

// Fixed returns an instruction with a fixed encoding.
func Fixed(text string, b ...byte) Inst { return Inst{Text: text, Bytes: b} }
