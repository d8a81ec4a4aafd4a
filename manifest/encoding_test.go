package manifest

import (
	"bytes"
	"strings"
	"testing"
)

// UTF-16 with a byte-order mark reads as UTF-8 and writes back to the same bytes.
func TestUTF16RoundTrip(t *testing.T) {
	text := "apiVersion: v1\r\nkind: ConfigMap # ünïcode, 日本, 𝄞\r\nmetadata: {name: x}\r\n"
	for _, e := range []Encoding{UTF16LE, UTF16BE} {
		data := FromUTF8([]byte(text), e)
		got, enc, err := ToUTF8(data)
		if err != nil || enc != e || string(got) != text {
			t.Fatalf("%v: %q, %v, %v", e, got, enc, err)
		}
		if again := FromUTF8(got, enc); !bytes.Equal(again, data) {
			t.Errorf("%v: written back differs", e)
		}
	}
	if got, enc, err := ToUTF8([]byte(text)); err != nil || enc != UTF8 || string(got) != text {
		t.Errorf("UTF-8: %q %v %v", got, enc, err)
	}
	for _, bad := range [][]byte{{0xFF, 0xFE, 'a'}, {0xFF, 0xFE, 0x00, 0xD8, 'a', 0}} {
		if _, _, err := ToUTF8(bad); err == nil || !strings.Contains(err.Error(), "UTF-16") {
			t.Errorf("% x: %v, want an error naming UTF-16", bad, err)
		}
	}
}

// Whatever ToUTF8 reads, FromUTF8 writes back to the same bytes.
func FuzzUTF16(f *testing.F) {
	f.Add(FromUTF8([]byte("kind: Pod\n"), UTF16LE))
	f.Add(FromUTF8([]byte("a: 𝄞\n"), UTF16BE))
	f.Add([]byte{0xFF, 0xFE, 0x00, 0xD8})
	f.Fuzz(func(t *testing.T, data []byte) {
		text, enc, err := ToUTF8(data)
		if err != nil {
			return
		}
		if back := FromUTF8(text, enc); !bytes.Equal(back, data) {
			t.Errorf("% x read as %v %q, written back as % x", data, enc, text, back)
		}
	})
}
