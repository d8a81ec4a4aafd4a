package probe

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/nap-k8s/nap/internal/testutil/golden"
)

// proofDir holds the README's picture and the two probe reports it is drawn from,
// recorded on the lab by make proof-picture.
const proofDir = "../docs/proof"

// TestProofPicture: the README's picture is the probe's own plot of its two reports
// (a rolling restart behind the ingress, without a delay and with nap's), stacked; the
// reports say what the picture claims (requests failed without nap, none with it); and
// headless Chromium shows it so: two plots, failures coloured in the first, none in the
// second. -update draws it again from the reports.
func TestProofPicture(t *testing.T) {
	var reports []Summary
	for _, name := range []string{"without.json", "with.json"} {
		f, err := os.Open(filepath.Join(proofDir, name))
		if err != nil {
			t.Fatal(err)
		}
		s, err := ReadSummary(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if s.Title == "" || s.Total.Requests < 1000 {
			t.Errorf("%s: title %q, %d requests: not a recorded rollout", name, s.Title, s.Total.Requests)
		}
		reports = append(reports, s)
	}
	if reports[0].Total.Failed == 0 || reports[1].Total.Failed != 0 {
		t.Errorf("failed requests without nap %d, with nap %d: the picture claims some, then none",
			reports[0].Total.Failed, reports[1].Total.Failed)
	}
	var svg bytes.Buffer
	if err := Stack(&svg, reports...); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(proofDir, "rollout.svg")
	golden.Check(t, page, svg.Bytes())
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	img := screenshot(t, abs, "900,680")
	axes := axisRows(img)
	if len(axes) != 2 {
		t.Fatalf("time axes at rows %v, want two plots", axes)
	}
	b := img.Bounds()
	panel2 := b.Min.Y + b.Dy()/2 // the plots are the same height
	count := func(c string, from, to int) (n int) {
		for y := from; y < to; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				if hex(img.At(x, y)) == c {
					n++
				}
			}
		}
		return n
	}
	failed := func(from, to int) (n int) {
		for _, k := range Kinds {
			if k != OK {
				n += count(KindColors[k], from, to)
			}
		}
		return n
	}
	if n := failed(b.Min.Y, axes[0]); n < 20 {
		t.Errorf("the first plot shows %d pixels of failures above its axis, want them drawn", n)
	}
	if n := failed(panel2, b.Max.Y); n != 0 {
		t.Errorf("the second plot shows %d pixels of failures, want none", n)
	}
	for i, from := range []int{b.Min.Y, panel2} {
		if n := count(okColor, from, axes[i]); n < 1000 {
			t.Errorf("plot %d: %d pixels of successful requests, want them drawn", i+1, n)
		}
	}
}
