package manifest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// Encoding is how a manifest's text is encoded: UTF-8, or UTF-16 with a byte-order mark
// (what Windows PowerShell 5.1's `>` writes: kubectl get ... -o yaml > web.yaml).
type Encoding int

// The encodings.
const (
	UTF8 Encoding = iota
	UTF16LE
	UTF16BE
)

func (e Encoding) String() string {
	switch e {
	case UTF16LE:
		return "UTF-16 (little-endian)"
	case UTF16BE:
		return "UTF-16 (big-endian)"
	}
	return "UTF-8"
}

// The byte-order marks of UTF-16.
var (
	bomLE = []byte{0xFF, 0xFE}
	bomBE = []byte{0xFE, 0xFF}
)

// ToUTF8 is data as UTF-8 text, and the encoding it had: UTF-16 with a byte-order mark
// is decoded (without the mark), anything else is returned as it is. UTF-16 that would
// not encode back to the same bytes (an odd length, a lone surrogate) is an error, so
// that FromUTF8 gives back every byte of what ToUTF8 read.
func ToUTF8(data []byte) ([]byte, Encoding, error) {
	var order binary.ByteOrder
	enc := UTF8
	switch {
	case bytes.HasPrefix(data, bomLE):
		order, enc = binary.LittleEndian, UTF16LE
	case bytes.HasPrefix(data, bomBE):
		order, enc = binary.BigEndian, UTF16BE
	default:
		return data, UTF8, nil
	}
	body := data[2:]
	if len(body)%2 != 0 {
		return nil, enc, errors.New(enc.String() + " with an odd number of bytes")
	}
	units := make([]uint16, len(body)/2)
	for i := range units {
		units[i] = order.Uint16(body[2*i:])
	}
	runes := utf16.Decode(units)
	if !slices.Equal(utf16.Encode(runes), units) {
		return nil, enc, errors.New(enc.String() + " that is not valid (a lone surrogate)")
	}
	out := make([]byte, 0, len(runes))
	for _, r := range runes {
		out = utf8.AppendRune(out, r)
	}
	return out, enc, nil
}

// FromUTF8 writes UTF-8 text in e, with its byte-order mark: the bytes ToUTF8 read, for
// text it returned.
func FromUTF8(text []byte, e Encoding) []byte {
	if e == UTF8 {
		return text
	}
	var order binary.AppendByteOrder = binary.LittleEndian
	bom := bomLE
	if e == UTF16BE {
		order, bom = binary.BigEndian, bomBE
	}
	units := utf16.Encode(bytes.Runes(text))
	out := make([]byte, 0, 2+2*len(units))
	out = append(out, bom...)
	for _, u := range units {
		out = order.AppendUint16(out, u)
	}
	return out
}
