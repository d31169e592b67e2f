// Package browser tests `rlmm console` in a real headless Chromium
// (Debian's chromium package, driven over the DevTools protocol with
// chromedp): it writes consoletest's known partition to an embedded log (and,
// with a Kafka broker, to a metadata topic), starts the rlmm binary's console
// on it, loads the page and checks from the DOM that the timeline drew that
// partition's segments (their leader epochs and colours, states, the gaps,
// the overlap and the stuck copy), then saves a screenshot whose path it
// prints.
//
// scripts/browser-test.sh installs Chromium when it is missing (apt-get,
// as root) and runs these tests; make test runs that script as its own step
// (the package is left out of the step that runs every package). Without a
// Chromium the tests skip saying why, except under CI=true, where they fail.
package browser
