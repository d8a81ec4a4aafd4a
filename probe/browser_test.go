package probe

import (
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nap-k8s/nap/internal/testenv"
)

// The HTML report as a person sees it: headless Chromium renders it, and the
// screenshot must show, above the time axis, each failure kind in its colour, the p99
// line, and the events as markers above the bars.
func TestHTMLInBrowser(t *testing.T) {
	chromium := testenv.LookPath(t, "chromium", "prereqs")
	dir := t.TempDir()
	page, shot := filepath.Join(dir, "rollout.html"), filepath.Join(dir, "shot.png")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := HTML(f, rollout(t)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--force-color-profile=srgb", "--user-data-dir="+filepath.Join(dir, "profile"), "--window-size=1000,700",
		"--screenshot="+shot, "file://"+page)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	r, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	img, err := png.Decode(r)
	if err != nil {
		t.Fatal(err)
	}
	hex := func(c color.Color) string {
		r, g, b, _ := c.RGBA()
		return string([]byte{'#', digits[r>>12], digits[r>>8&15], digits[g>>12], digits[g>>8&15], digits[b>>12], digits[b>>8&15]})
	}
	bounds := img.Bounds()
	axis := axisRow(img, "#333333", hex)
	if axis < 0 {
		t.Fatal("no time axis in the screenshot")
	}
	// Count each colour above the axis only: the legend below it has a square of each.
	above := func(c string) (n, top, bottom int) {
		top = -1
		for y := bounds.Min.Y; y < axis; y++ {
			for x := bounds.Min.X; x < bounds.Max.X; x++ {
				if hex(img.At(x, y)) == c {
					n++
					if top < 0 {
						top = y
					}
					bottom = y
				}
			}
		}
		return n, top, bottom
	}
	for _, c := range []struct{ what, color string }{
		{"refused requests", KindColors[Refused]}, {"EOFs", KindColors[EOF]}, {"the p99 line", latencyColor},
		{"successful requests", okColor}, {"pods leaving", leavingColor}, {"endpoint changes", endpointColor}, {"pods serving", servingColor},
	} {
		if n, _, _ := above(c.color); n < 20 {
			t.Errorf("%s (%s): %d pixels above the axis, want them drawn", c.what, c.color, n)
		}
	}
	_, barsTop, _ := above(okColor)
	for _, c := range []string{leavingColor, endpointColor, servingColor} {
		if _, _, bottom := above(c); bottom >= barsTop {
			t.Errorf("event markers (%s) reach row %d, into the bars (from row %d)", c, bottom, barsTop)
		}
	}
	if t.Failed() {
		keep := filepath.Join(os.TempDir(), "nap-probe-browser.png")
		if b, err := os.ReadFile(shot); err == nil && os.WriteFile(keep, b, 0o644) == nil {
			t.Logf("screenshot kept at %s", keep)
		}
	}
}

const digits = "0123456789abcdef"

// axisRow is the row of the plot's time axis: the first with a run of c across most of
// the picture's width.
func axisRow(img image.Image, c string, hex func(color.Color) string) int {
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		run, best := 0, 0
		for x := b.Min.X; x < b.Max.X; x++ {
			if hex(img.At(x, y)) == c {
				run++
				best = max(best, run)
			} else {
				run = 0
			}
		}
		if best > b.Dx()/2 {
			return y
		}
	}
	return -1
}
