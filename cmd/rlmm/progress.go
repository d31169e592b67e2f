package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows how far a long command is: a progress bar with rate and
// ETA when stderr is a terminal, a plain line every few seconds otherwise
// (logs, CI). Safe for concurrent use.
type progress struct {
	mu      sync.Mutex
	bar     *progressbar.ProgressBar // nil when not a terminal
	w       io.Writer
	what    string
	start   time.Time
	last    time.Time
	every   time.Duration
	done    int64
	total   int64
	phase   string
	silent  bool
	printed bool
}

// newProgress returns a progress display on stderr for a task counting
// unit (e.g. "records"); silent shows nothing.
func newProgress(what, unit string, silent bool) *progress {
	p := &progress{w: os.Stderr, what: what, start: time.Now(), every: 2 * time.Second, silent: silent}
	if !silent && term.IsTerminal(int(os.Stderr.Fd())) {
		p.bar = progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(os.Stderr),
			progressbar.OptionSetDescription(what),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString(unit),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetWidth(30),
		)
	}
	p.last = p.start
	return p
}

// set records done of total units in phase.
func (p *progress) set(done, total int64, phase string) {
	if p.silent {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		if total != p.total {
			p.bar.ChangeMax64(total)
		}
		if phase != p.phase {
			p.bar.Describe(p.what + ": " + phase)
		}
		_ = p.bar.Set64(done)
	}
	p.done, p.total, p.phase = done, total, phase
	if p.bar == nil && time.Since(p.last) >= p.every {
		p.last = time.Now()
		p.line()
	}
}

// line prints the plain progress line. The caller holds mu.
func (p *progress) line() {
	elapsed := time.Since(p.start)
	rate := float64(p.done) / max(elapsed.Seconds(), 1e-9)
	s := fmt.Sprintf("%s: %s: %d", p.what, p.phase, p.done)
	if p.total > 0 { // a negative total is unknown (a listing)
		s += fmt.Sprintf("/%d (%.0f%%)", p.total, 100*float64(p.done)/float64(p.total))
	}
	s += fmt.Sprintf(", %.0f/s", rate)
	if rate > 0 && p.total > p.done {
		eta := time.Duration(float64(p.total-p.done) / rate * float64(time.Second))
		s += fmt.Sprintf(", ETA %s", eta.Round(time.Second))
	}
	fmt.Fprintln(p.w, s)
	p.printed = true
}

// finish removes the bar (a terminal) or prints a last line if earlier
// lines were printed.
func (p *progress) finish() {
	if p.silent {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
		_ = p.bar.Clear()
		return
	}
	if p.printed {
		p.phase = "done"
		p.line()
	}
}
