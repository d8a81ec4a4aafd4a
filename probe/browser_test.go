package probe

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nap-k8s/nap/internal/testenv"
)

// The HTML report as a person sees it: headless Chromium renders it, and the
// screenshot must show, above the time axis, each failure kind in its colour, the p99
// line, and the events as markers above the bars.
func TestHTMLInBrowser(t *testing.T) {
	page := filepath.Join(t.TempDir(), "rollout.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := HTML(f, rollout(t)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	img := screenshot(t, page, "1000,700")
	bounds := img.Bounds()
	axes := axisRows(img)
	if len(axes) != 1 {
		t.Fatalf("time axes at rows %v, want one", axes)
	}
	axis := axes[0]
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
}

const digits = "0123456789abcdef"

// screenshot is page (a file) as headless Chromium renders it in a window of size
// ("W,H"); kept in the temporary folder when the test fails.
func screenshot(t *testing.T, page, size string) image.Image {
	t.Helper()
	chromium := testenv.LookPath(t, "chromium", "prereqs")
	dir := t.TempDir()
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--force-color-profile=srgb", "--user-data-dir="+filepath.Join(dir, "profile"), "--window-size="+size,
		"--screenshot="+shot, "file://"+page)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			keep := filepath.Join(os.TempDir(), "nap-"+strings.ReplaceAll(t.Name(), "/", "-")+".png")
			if os.WriteFile(keep, b, 0o644) == nil {
				t.Logf("screenshot kept at %s", keep)
			}
		}
	})
	return img
}

// hex is c as #rrggbb.
func hex(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return string([]byte{'#', digits[r>>12], digits[r>>8&15], digits[g>>12], digits[g>>8&15], digits[b>>12], digits[b>>8&15]})
}

// axisRows are the rows of the plots' time axes, top to bottom: the first row of each
// band with a run of dark grey across most of the picture's width (a one-unit line may
// be smoothed over two rows, lighter than its colour).
func axisRows(img image.Image) []int {
	b := img.Bounds()
	dark := func(c color.Color) bool {
		r, g, bl, _ := c.RGBA()
		r, g, bl = r>>8, g>>8, bl>>8
		return r < 0xa0 && max(r, g, bl)-min(r, g, bl) < 16
	}
	var rows []int
	last := -2
	for y := b.Min.Y; y < b.Max.Y; y++ {
		run, best := 0, 0
		for x := b.Min.X; x < b.Max.X; x++ {
			if dark(img.At(x, y)) {
				run++
				best = max(best, run)
			} else {
				run = 0
			}
		}
		if best > b.Dx()/2 {
			if y != last+1 {
				rows = append(rows, y)
			}
			last = y
		}
	}
	return rows
}
