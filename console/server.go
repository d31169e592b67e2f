package console

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/rlmm-go/rlmm/internal/view"
	"github.com/rlmm-go/rlmm/scrub"
)

// Server serves the page and the JSON API over the newest Snapshot it was
// given. Every route is GET (and HEAD); other methods get 405. It is safe
// for concurrent use.
type Server struct {
	refreshEvery time.Duration
	logger       *slog.Logger
	mux          *http.ServeMux

	mu   sync.Mutex
	snap *Snapshot
	// lastErr is the error of the newest reading when it failed (the
	// served snapshot is then the one before), at lastErrAt.
	lastErr   string
	lastErrAt time.Time
}

// Options configure a Server.
type Options struct {
	// RefreshEvery is how often the log is re-read (shown on the page; 0:
	// read once, at start).
	RefreshEvery time.Duration
	// Logger receives one line per failed request write. Nil discards.
	Logger *slog.Logger
}

// NewServer returns a server with no snapshot yet: until Set, the API
// answers 503.
func NewServer(opts Options) *Server {
	s := &Server{refreshEvery: opts.RefreshEvery, logger: opts.Logger, mux: http.NewServeMux()}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		// assets is embedded at build time with that directory.
		panic(fmt.Sprintf("console: embedded assets: %v", err))
	}
	s.mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "index.html")
	})
	s.mux.HandleFunc("GET /api/overview", s.withSnapshot(s.overview))
	s.mux.HandleFunc("GET /api/anomalies", s.withSnapshot(s.anomalies))
	s.mux.HandleFunc("GET /api/scrub", s.withSnapshot(s.scrub))
	s.mux.HandleFunc("GET /api/partitions/{topicId}/{partition}", s.withSnapshot(s.partition))
	return s
}

// Set makes snap the snapshot served and clears the last error.
func (s *Server) Set(snap *Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snap, s.lastErr, s.lastErrAt = snap, "", time.Time{}
}

// SetError records that a reading failed at at; the served snapshot stays.
func (s *Server) SetError(err error, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastErr, s.lastErrAt = err.Error(), at
}

// ServeHTTP serves the page and the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The page and its answers are read-only and same-origin; these keep
	// another site from framing the page or a browser from guessing types.
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'")
	s.mux.ServeHTTP(w, r)
}

type state struct {
	snap      *Snapshot
	lastErr   string
	lastErrAt time.Time
}

// withSnapshot answers 503 until there is a snapshot, else calls h with it.
func (s *Server) withSnapshot(h func(http.ResponseWriter, *http.Request, state)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		st := state{s.snap, s.lastErr, s.lastErrAt}
		s.mu.Unlock()
		if st.snap == nil {
			s.writeError(w, http.StatusServiceUnavailable, "the metadata log has not been read yet")
			return
		}
		h(w, r, st)
	}
}

// Overview is the answer of /api/overview.
type Overview struct {
	Source          string      `json:"source"`
	ReadAt          time.Time   `json:"readAt"`
	RefreshEveryMs  int64       `json:"refreshEveryMs"`
	LastError       string      `json:"lastRefreshError,omitempty"`
	LastErrorAt     *time.Time  `json:"lastRefreshErrorAt,omitempty"`
	Counts          view.Counts `json:"counts"`
	UserPartitions  int         `json:"userPartitions"`
	ReferenceTimeMs int64       `json:"referenceTimeMs"`
	StuckAfterMs    int64       `json:"stuckAfterMs"`
	// Topics and Partitions are view.Sizes' rows: the topics and the
	// partitions with remote segments.
	Topics        []view.Size         `json:"topics"`
	Partitions    []view.Size         `json:"partitions"`
	Failures      int                 `json:"anomalyCount"`
	Warnings      int                 `json:"warningCount"`
	HistoryStarts []view.HistoryStart `json:"historyStarts"`
	// Scrub sums scrub's findings up; nil without remote storage.
	Scrub *ScrubSummary `json:"scrub"`
}

// ScrubSummary is the overview's part of a scrub.
type ScrubSummary struct {
	Store   string         `json:"store"`
	Layout  string         `json:"layout,omitempty"`
	Summary *scrub.Summary `json:"summary,omitempty"`
	Error   string         `json:"error,omitempty"`
}

func (s *Server) overview(w http.ResponseWriter, _ *http.Request, st state) {
	snap := st.snap
	o := Overview{Source: snap.in.Source, ReadAt: snap.in.ReadAt.UTC(), RefreshEveryMs: s.refreshEvery.Milliseconds(),
		LastError: st.lastErr, Counts: snap.counts, UserPartitions: len(snap.byName),
		ReferenceTimeMs: snap.in.ReferenceMs, StuckAfterMs: snap.in.StuckAfter.Milliseconds(),
		Topics: nonNil(snap.topics), Partitions: nonNil(snap.partitions), Failures: snap.failures,
		Warnings: len(snap.anomalies) - snap.failures, HistoryStarts: nonNil(snap.in.Builder.History())}
	if st.lastErr != "" {
		at := st.lastErrAt.UTC()
		o.LastErrorAt = &at
	}
	if sc := snap.in.Scrub; sc != nil {
		o.Scrub = &ScrubSummary{Store: sc.Store, Error: sc.Error}
		if sc.Report != nil {
			o.Scrub.Layout, o.Scrub.Summary = sc.Report.Layout, &sc.Report.Summary
		}
	}
	s.writeJSON(w, o)
}

// Anomalies is the answer of /api/anomalies: verify's anomalies.
type Anomalies struct {
	Failures  int            `json:"anomalyCount"`
	Warnings  int            `json:"warningCount"`
	Anomalies []view.Anomaly `json:"anomalies"`
}

func (s *Server) anomalies(w http.ResponseWriter, _ *http.Request, st state) {
	snap := st.snap
	s.writeJSON(w, Anomalies{Failures: snap.failures, Warnings: len(snap.anomalies) - snap.failures, Anomalies: nonNil(snap.anomalies)})
}

// ScrubAnswer is the answer of /api/scrub.
type ScrubAnswer struct {
	// Enabled is false when the console was given no remote storage.
	Enabled bool `json:"enabled"`
	*Scrub
}

func (s *Server) scrub(w http.ResponseWriter, _ *http.Request, st state) {
	a := ScrubAnswer{Enabled: st.snap.in.Scrub != nil, Scrub: st.snap.in.Scrub}
	s.writeJSON(w, a)
}

func (s *Server) partition(w http.ResponseWriter, r *http.Request, st state) {
	topicID, partText := r.PathValue("topicId"), r.PathValue("partition")
	n, err := strconv.ParseInt(partText, 10, 32)
	if err != nil || n < 0 {
		s.writeError(w, http.StatusBadRequest, fmt.Sprintf("partition %q: not a partition number (0 or more)", partText))
		return
	}
	p, ok := st.snap.Partition(topicID, int32(n))
	if !ok {
		s.writeError(w, http.StatusNotFound, fmt.Sprintf("no user partition %d of topic id %s in the metadata log", n, topicID))
		return
	}
	s.writeJSON(w, p)
}

// errorAnswer is the body of every error answer.
type errorAnswer struct {
	Error string `json:"error"`
}

func (s *Server) writeError(w http.ResponseWriter, status int, msg string) {
	s.write(w, status, errorAnswer{Error: msg})
}

func (s *Server) writeJSON(w http.ResponseWriter, v any) { s.write(w, http.StatusOK, v) }

func (s *Server) write(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Every answer is made of plain structs; this is a bug.
		s.logger.Error("console: encoding an answer", "error", err)
		http.Error(w, "encoding the answer failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if _, err := w.Write(append(body, '\n')); err != nil {
		s.logger.Debug("console: writing an answer", "error", err)
	}
}

// nonNil returns s, or an empty slice for nil (JSON [] rather than null).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
