package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// OpsHandler is the operations endpoint: /metrics (Prometheus text format
// from g, and the server's own families of the manager's Stats: see
// statsCollector), /healthz and /readyz.
//
//   - /healthz: 200 while the process serves and its manager is not
//     closed (also while it starts); 503 once the manager is closed.
//   - /readyz: 200 once the manager is up and every metadata partition
//     assigned so far is caught up (also when none is assigned yet); 503
//     otherwise, with a short text body saying what is not ready.
func (s *Server) OpsHandler(g prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	// Uncompressed: promhttp's gzip writer is a compress/flate compressor of
	// 0.5 to 0.9 MB kept in a pool between scrapes, a tenth of a small
	// sidecar's live heap (docs/bench/broker.md), for a page of a
	// few tens of KiB, usually read over loopback.
	mux.Handle("GET /metrics", promhttp.HandlerFor(prometheus.Gatherers{g, s.stats},
		promhttp.HandlerOpts{ErrorLog: slogPrinter{s}, DisableCompression: true}))
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	return mux
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	if m := s.mgr.Load(); m != nil && m.Closed() {
		http.Error(w, "manager closed", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

// Readiness says whether every assigned metadata partition is caught up and,
// if not, why, in a line of text.
func (s *Server) Readiness() (bool, string) {
	m := s.mgr.Load()
	if m == nil {
		return false, "starting: opening the metadata log and loading the snapshot"
	}
	if m.Closed() {
		return false, "manager closed"
	}
	st := m.Stats()
	var waiting []string
	for _, p := range st.Partitions {
		if !p.Ready {
			waiting = append(waiting, fmt.Sprintf("%d (applied %d of %d)", p.Partition, p.Applied, p.Target-1))
		}
	}
	if len(waiting) > 0 {
		return false, "metadata partitions catching up: " + strings.Join(waiting, ", ")
	}
	return true, fmt.Sprintf("ready: %d metadata partitions assigned, all caught up", len(st.Partitions))
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	ok, why := s.Readiness()
	if !ok {
		http.Error(w, why, http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, why)
}

// slogPrinter lets promhttp log its errors through the server's logger.
type slogPrinter struct{ s *Server }

func (p slogPrinter) Println(v ...any) { p.s.logger.Error("server: /metrics: " + fmt.Sprint(v...)) }
