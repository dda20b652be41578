package tuningpage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// probeScript, added before </body> of a copy of a page, waits for the
// page's fonts and writes into the body's data-probe attribute, for
// --dump-dom, where each figure's SVG was laid out (CSS pixels, page
// coordinates), how many text elements it has and their total rendered
// width, and each font face's load status.
const probeScript = `<script>
document.fonts.ready.then(function () {
  var figs = [];
  document.querySelectorAll("figure svg").forEach(function (s) {
    var r = s.getBoundingClientRect(), n = 0, w = 0;
    s.querySelectorAll("text").forEach(function (t) { n++; w += t.getComputedTextLength(); });
    figs.push({x: r.left + window.scrollX, y: r.top + window.scrollY, w: r.width, h: r.height, texts: n, textWidth: w});
  });
  var fonts = [];
  document.fonts.forEach(function (f) { fonts.push(f.family.replace(/"/g, "") + " " + f.status); });
  document.body.setAttribute("data-probe", JSON.stringify({figures: figs, fonts: fonts}));
});
</script>`

// probe is what probeScript reports.
type probe struct {
	Figures []struct {
		X, Y, W, H float64
		Texts      int
		TextWidth  float64
	}
	Fonts []string
}

// The pages open in headless Chromium with their figures: every figure's
// SVG is laid out at a useful size with its labels rendered in the
// embedded font (no network: the page is a file), and the screenshot has
// ink inside every figure — the release page's space figure with the red
// mark of the selected candidate. DPTUNE_CHROMIUM names the browser (make
// test installs Debian's chromium and sets it); the test is skipped
// without it, and fails, rather than skips, when the browser it names
// cannot render. Screenshots go to DPTUNE_SCREENSHOT_DIR when set.
func TestPagesInChromium(t *testing.T) {
	browser := os.Getenv("DPTUNE_CHROMIUM")
	if browser == "" {
		t.Skip("DPTUNE_CHROMIUM is not set (make test installs chromium and sets it)")
	}
	shots := os.Getenv("DPTUNE_SCREENSHOT_DIR")
	if shots == "" {
		shots = t.TempDir()
	}
	all := tuneAll(t)
	rec, grid := write(t, all["recommended"]), write(t, all["grid"])
	for _, c := range []struct {
		name, page string
		selected   bool // the first figure marks the selected candidate in red
	}{
		{"tuning-recommended", rec.Release, true},
		{"tuning-grid", grid.Release, true},
		{"tuning-not-private-recommended", rec.Curator, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := os.ReadFile(c.page)
			if err != nil {
				t.Fatal(err)
			}
			figures := strings.Count(string(b), "<figure>")
			dir := t.TempDir()
			probed := filepath.Join(dir, "probe.html")
			if err := os.WriteFile(probed, []byte(strings.Replace(string(b), "</body>", probeScript+"</body>", 1)), 0o600); err != nil {
				t.Fatal(err)
			}
			dom := chromium(t, browser, "--window-size=1000,1000", "--virtual-time-budget=10000", "--dump-dom", "file://"+probed)
			m := regexp.MustCompile(`data-probe="([^"]*)"`).FindSubmatch(dom)
			if m == nil {
				t.Fatalf("the page did not finish loading (no probe in the DOM):\n%.2000s", dom)
			}
			var p probe
			if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &p); err != nil {
				t.Fatal(err)
			}
			if !contains(p.Fonts, "Liberation Serif loaded") {
				t.Errorf("the figures' font did not load: %q", p.Fonts)
			}
			if len(p.Figures) != figures || figures < 2 {
				t.Fatalf("%d figures laid out, %d on the page", len(p.Figures), figures)
			}
			bottom := 0.0
			for i, f := range p.Figures {
				if f.W < 300 || f.H < 80 || f.Texts == 0 || f.TextWidth <= 0 {
					t.Errorf("figure %d laid out at %.0f×%.0f px with %d labels %.0f px wide", i+1, f.W, f.H, f.Texts, f.TextWidth)
				}
				bottom = math.Max(bottom, f.Y+f.H)
			}
			shot := filepath.Join(shots, c.name+".png")
			chromium(t, browser, "--hide-scrollbars", fmt.Sprintf("--window-size=1000,%d", int(bottom)+40), "--screenshot="+shot, "file://"+c.page)
			img := decodePNG(t, shot)
			for i, f := range p.Figures {
				r := image.Rect(int(f.X), int(f.Y), int(f.X+f.W), int(f.Y+f.H))
				ink, colours, reds := inkIn(img, r)
				if ink < 0.01 || colours < 4 {
					t.Errorf("figure %d (%v) is blank in the screenshot: %.3f of its pixels inked, %d colours", i+1, r, ink, colours)
				}
				if i == 0 && c.selected && reds < 20 {
					t.Errorf("figure 1 has %d red pixels: the selected candidate's mark is not drawn", reds)
				}
			}
		})
	}
}

// chromium runs the headless browser with args and returns its standard
// output; the test fails if it does not succeed within a minute.
func chromium(t *testing.T, browser string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--force-device-scale-factor=1",
		"--user-data-dir=" + t.TempDir()}, args...)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, browser, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, stderr.Bytes())
	}
	return stdout.Bytes()
}

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// inkIn returns the share of r's pixels in img that are not white, how
// many colours r has, and how many of its pixels are the selection's red.
func inkIn(img image.Image, r image.Rectangle) (ink float64, colours, reds int) {
	r = r.Intersect(img.Bounds())
	seen := map[uint32]bool{}
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			cr, cg, cb = cr>>8, cg>>8, cb>>8
			seen[cr<<16|cg<<8|cb] = true
			n++
			if cr < 0xf0 || cg < 0xf0 || cb < 0xf0 {
				ink++
			}
			if cr > 150 && cg < 90 && cb < 90 {
				reds++
			}
		}
	}
	if n == 0 {
		return 0, 0, 0
	}
	return ink / float64(n), len(seen), reds
}
