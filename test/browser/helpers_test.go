package browser

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// testTimeout bounds each wait of a test.
const testTimeout = 2 * time.Minute

// screenshotDir is where the screenshots go (go test ./test/browser -args -screenshots DIR).
var screenshotDir = flag.String("screenshots", os.TempDir(), "the directory the console's screenshots are written to")

// cannotRun skips t saying why, or fails it under CI=true, where every part
// is installed by the scripts.
func cannotRun(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why + " (CI=true: scripts/browser-test.sh installs what the test needs)")
	}
	t.Skip(why)
}

// chromiumPath returns the browser to drive: chromium on PATH (where
// scripts/chromium.sh install puts Debian's).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	cannotRun(t, "no Chromium: no chromium or chromium-browser on PATH; `bash scripts/browser-test.sh` installs Debian's chromium (as root) and runs this test")
	return ""
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// rlmmBinary builds cmd/rlmm once into a directory removed after the tests.
func rlmmBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rlmm-browser-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "rlmm")
		out, err := exec.Command("go", "build", "-o", binPath, "../../cmd/rlmm").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ../../cmd/rlmm: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// consoleURL matches the line rlmm console prints once it serves.
var consoleURL = regexp.MustCompile(`^rlmm console: (http://\S+/) `)

// startConsole runs `rlmm console args... --listen 127.0.0.1:0` until the
// test ends and returns the URL it serves at.
func startConsole(t *testing.T, args ...string) string {
	t.Helper()
	args = append([]string{"console", "--listen", "127.0.0.1:0", "--refresh", "0", "-q"}, args...)
	cmd := exec.Command(rlmmBinary(t), args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	t.Cleanup(func() {
		// SIGINT: the console shuts its server down and exits 0.
		_ = cmd.Process.Signal(os.Interrupt)
		waited := make(chan error, 1)
		go func() { <-readDone; waited <- cmd.Wait() }()
		select {
		case err := <-waited:
			if err != nil {
				t.Errorf("rlmm console did not stop cleanly on SIGINT: %v\n%s", err, stderr.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-waited
			t.Errorf("rlmm console did not stop within 30 s of SIGINT\n%s", stderr.String())
		}
	})
	deadline := time.After(testTimeout)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("rlmm %s ended before serving:\n%s", strings.Join(args, " "), stderr.String())
			}
			if m := consoleURL.FindStringSubmatch(line); m != nil {
				t.Logf("%s", line)
				return m[1]
			}
		case <-deadline:
			t.Fatalf("rlmm %s did not serve within %s:\n%s", strings.Join(args, " "), testTimeout, stderr.String())
		}
	}
}

// newBrowser starts a headless Chromium with a fresh profile, closed when
// the test ends, and returns a tab's context.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		// Tall enough for the whole page: FullScreenshot takes the viewport.
		chromedp.WindowSize(1400, 1800),
		// Without these Chromium keeps trying the network (refused on an
		// offline machine) and hangs.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("force-color-profile", "srgb"),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	// Start the browser now (the first Do on ctx does; a timeout on that
	// context would bind the browser's life to it), so that a browser that
	// cannot start says so here.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx
}

// screenshot takes a screenshot of the page, cut to the height of its
// content, writes it to the directory of -screenshots (default: the
// temporary directory) as rlmm-console-<name>.png and returns its path.
func screenshot(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("taking a screenshot: %v", err)
	}
	height, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`Math.ceil(document.body.getBoundingClientRect().bottom * window.devicePixelRatio)`))
	if err != nil {
		t.Fatalf("reading the page's height: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); int(height) > 0 && int(height) < b.Dy() {
		if sub, ok := img.(interface {
			SubImage(image.Rectangle) image.Image
		}); ok {
			img = sub.SubImage(image.Rect(b.Min.X, b.Min.Y, b.Max.X, b.Min.Y+int(height)))
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(*screenshotDir, "rlmm-console-"+name+".png")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
