package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// recordFile is a cluster's record in its directory: what Start chose
// (ports, cluster id, resolved jars), for Open (the command's stop and
// status) and for restarts. It is written by this package and read only
// for the same cluster: it never overrides a caller's Config.
const recordFile = "cluster.json"

// record is what recordFile holds.
type record struct {
	Config     Config       `json:"config"`
	ClusterID  string       `json:"cluster_id"`
	Nodes      []nodeLayout `json:"nodes"`
	RSM        *RSMSettings `json:"rsm,omitempty"`
	PluginJar  string       `json:"plugin_jar,omitempty"`
	RLMMBinary string       `json:"rlmm_binary,omitempty"`
}

// Cluster is a KRaft cluster of Config.Nodes nodes on 127.0.0.1, in a
// directory: node-N/ per node, security/ (with a secure listener),
// tiered/ (the file-system RSMs' shared root), bin/ (a built rlmm) and
// cluster.json.
type Cluster struct {
	dir      string
	log      io.Writer
	cache    *Cache
	libs     string
	security *SecurityFiles
	realm    string

	mu    sync.Mutex // guards cfg, rec and each node's proc and paused
	cfg   Config
	rec   record
	nodes []*Node
}

// Start makes a new cluster of cfg in dir (created if missing; it must not
// hold a cluster already), resolving the jars it needs, and starts every
// node; it returns once each answers. On an error nothing it started runs.
// log receives what Maven and the builds print (os.Stderr when nil).
func Start(ctx context.Context, dir string, cfg Config, log io.Writer) (*Cluster, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("kafkatest: %w", err)
	}
	if log == nil {
		log = os.Stderr
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, recordFile)); err == nil {
		return nil, fmt.Errorf("kafkatest: %s already holds a cluster (its %s): Open it, or use another directory", dir, recordFile)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, log: log, cfg: cfg, cache: &Cache{Log: log}}
	if err := c.prepare(ctx); err != nil {
		return nil, err
	}
	// Each format is a JVM of a few seconds: the nodes' run at once.
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		if err := n.writeConfig(); err != nil {
			return nil, err
		}
		wg.Go(func() { errs[i] = n.format(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := c.startNodes(ctx, c.nodes); err != nil {
		return nil, err
	}
	return c, nil
}

// prepare resolves the jars, chooses the ports and cluster id, makes the
// security material and the RSM, and writes the record.
func (c *Cluster) prepare(ctx context.Context) error {
	cfg := c.cfg
	var err error
	if c.libs, err = c.cache.KafkaLibs(ctx, cfg.Version); err != nil {
		return err
	}
	c.rec = record{Config: cfg, ClusterID: newClusterID()}
	if c.rec.Nodes, err = layout(cfg, c.dir); err != nil {
		return err
	}
	if err := c.loadSecurity(true); err != nil {
		return err
	}
	if cfg.Tiered {
		remote := filepath.Join(c.dir, "tiered")
		if err := os.MkdirAll(remote, 0o755); err != nil {
			return err
		}
		resolve, _ := lookupRSM(cfg.RSM)
		rsm, err := resolve(ctx, RSMEnv{Version: cfg.Version, RemoteDir: remote, Cache: c.cache})
		if err != nil {
			return fmt.Errorf("kafkatest: RSM %q: %w", cfg.RSM, err)
		}
		c.rec.RSM = &rsm
		if err := c.resolveRLMM(ctx); err != nil {
			return err
		}
	}
	c.makeNodes()
	return c.writeRecord()
}

// layout chooses every node's directory and listeners: free ports on
// 127.0.0.1, each advertised through cfg.Proxy when set.
func layout(cfg Config, dir string) ([]nodeLayout, error) {
	perNode := []string{ListenerPlaintext}
	var nodes []nodeLayout
	count := 0
	for i := 1; i <= cfg.Nodes; i++ {
		count += len(perNode) + boolInt(i <= cfg.Controllers) + boolInt(cfg.Security.secure())
	}
	ports, err := freePorts(count)
	if err != nil {
		return nil, err
	}
	for i := 1; i <= cfg.Nodes; i++ {
		n := nodeLayout{ID: i, Dir: filepath.Join(dir, "node-"+strconv.Itoa(i)), Controller: i <= cfg.Controllers,
			Listeners: map[string]Address{}}
		names := []string{ListenerPlaintext}
		if n.Controller {
			names = append(names, ListenerController)
		}
		if cfg.Security.secure() {
			names = append(names, ListenerSecure)
		}
		for _, name := range names {
			bind := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
			ports = ports[1:]
			adv := bind
			if cfg.Proxy != nil {
				if adv, err = cfg.Proxy(i, name, bind); err != nil {
					return nil, fmt.Errorf("kafkatest: the proxy of node %d's %s listener: %w", i, name, err)
				}
			}
			n.Listeners[name] = Address{Bind: bind, Advertised: adv}
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// freePorts binds n listeners at once (so the ports differ), notes their
// ports and releases them. Another process could take one before the
// broker binds it; the broker then fails to start and says so.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("kafkatest: choosing a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// newClusterID returns a random Kafka Uuid in Kafka's text form, drawn
// again when it is one Kafka reserves (zero, one) or starts with '-'
// (which Kafka's command-line tools take for a flag).
func newClusterID() string {
	for {
		var b [16]byte
		_, _ = rand.Read(b[:])
		s := base64.RawURLEncoding.EncodeToString(b[:])
		reserved := true
		for i, v := range b {
			if (i < 15 && v != 0) || (i == 15 && v > 1) {
				reserved = false
			}
		}
		if !reserved && s[0] != '-' {
			return s
		}
	}
}

// loadSecurity makes (or, for an opened cluster, reads) the security
// material.
func (c *Cluster) loadSecurity(create bool) error {
	if !c.cfg.Security.secure() {
		return nil
	}
	dir := filepath.Join(c.dir, "security")
	var err error
	if create {
		c.security, err = MakeSecurity(dir)
	} else {
		c.security, err = LoadSecurity(dir)
	}
	if err != nil {
		return err
	}
	if c.cfg.Security == GSSAPI {
		b, err := os.ReadFile(filepath.Join(c.cfg.KerberosDir, "realm"))
		if err != nil {
			return fmt.Errorf("kafkatest: the KDC's realm: %w", err)
		}
		c.realm = strings.TrimSpace(string(b))
	}
	return nil
}

// resolveRLMM finds or builds what the current RLMM needs (the plugin's
// jar and rlmm binary), once.
func (c *Cluster) resolveRLMM(ctx context.Context) error {
	if c.cfg.RLMM != RLMMPlugin {
		return nil
	}
	if c.rec.PluginJar == "" {
		jar := c.cfg.PluginJar
		if jar == "" {
			var err error
			if jar, err = c.cache.PluginJar(ctx); err != nil {
				return err
			}
		}
		if _, err := os.Stat(jar); err != nil {
			return fmt.Errorf("kafkatest: the plugin jar: %w", err)
		}
		c.rec.PluginJar = jar
	}
	if c.rec.RLMMBinary == "" {
		bin := c.cfg.RLMMBinary
		if bin == "" {
			bin = filepath.Join(c.dir, "bin", "rlmm")
			if err := c.cache.RLMMBinary(ctx, bin); err != nil {
				return err
			}
		}
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("kafkatest: the rlmm binary: %w", err)
		}
		c.rec.RLMMBinary = bin
	}
	return nil
}

func (c *Cluster) makeNodes() {
	c.nodes = nil
	for _, l := range c.rec.Nodes {
		c.nodes = append(c.nodes, &Node{c: c, layout: l})
	}
}

func (c *Cluster) writeRecord() error {
	c.rec.Config = c.cfg
	b, err := json.MarshalIndent(c.rec, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.dir, recordFile), append(b, '\n'), 0o644)
}

// propsInput is what node l's server.properties depends on now.
func (c *Cluster) propsInput(l nodeLayout) propsInput {
	in := propsInput{cfg: c.cfg, node: l, security: c.security, realm: c.realm, rsm: c.rec.RSM}
	for _, n := range c.rec.Nodes {
		if n.Controller {
			in.voters = append(in.voters, n)
		}
	}
	switch c.cfg.RLMM {
	case RLMMPlugin:
		in.rlmm = rlmmSettings{class: pluginRLMMClass, classPath: c.rec.PluginJar, binary: c.rec.RLMMBinary}
	default:
		in.rlmm = rlmmSettings{class: kafkaRLMMClass}
	}
	return in
}

// Open returns the cluster of a directory Start made (perhaps in another
// process, as the command's start does), attached to the nodes that run.
func Open(dir string) (*Cluster, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, recordFile))
	if err != nil {
		return nil, fmt.Errorf("kafkatest: %s holds no cluster: %w", dir, err)
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("kafkatest: %s: %w", filepath.Join(dir, recordFile), err)
	}
	if len(rec.Nodes) == 0 || rec.ClusterID == "" {
		return nil, fmt.Errorf("kafkatest: %s names no nodes or cluster id", filepath.Join(dir, recordFile))
	}
	c := &Cluster{dir: dir, log: os.Stderr, cfg: rec.Config.withDefaults(), rec: rec, cache: &Cache{Log: os.Stderr}}
	if err := c.loadSecurity(false); err != nil {
		return nil, err
	}
	c.makeNodes()
	for _, n := range c.nodes {
		if p, err := findBroker(n.pidFile(), n.PropertiesFile()); err == nil {
			n.proc = p
		}
	}
	return c, nil
}

// startNodes launches the nodes at once (a quorum of several voters forms
// only when they run together), then waits for each; on a failure it
// stops them.
func (c *Cluster) startNodes(ctx context.Context, nodes []*Node) error {
	if c.libs == "" {
		var err error
		if c.libs, err = c.cache.KafkaLibs(ctx, c.cfg.Version); err != nil {
			return err
		}
	}
	start := time.Now()
	for _, n := range nodes {
		if err := n.writeConfig(); err != nil {
			return err
		}
		if err := n.launch(); err != nil {
			c.stopNodes(nodes)
			return err
		}
	}
	if c.cfg.NoReadyWait {
		return nil
	}
	for _, n := range nodes {
		if err := n.waitReady(ctx, c.cfg.StartTimeout); err != nil {
			c.stopNodes(nodes)
			return err
		}
	}
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = strconv.Itoa(n.ID())
	}
	_, _ = fmt.Fprintf(c.log, "kafkatest: node(s) %s of %s answer (%s)\n", strings.Join(ids, ","), c.dir, since(start))
	return nil
}

// stopNodes stops the broker-only nodes first (their controlled shutdown
// needs a controller), then the controllers, each group at once.
func (c *Cluster) stopNodes(nodes []*Node) {
	var brokers, controllers []*Node
	for _, n := range nodes {
		if n.Controller() {
			controllers = append(controllers, n)
		} else {
			brokers = append(brokers, n)
		}
	}
	for _, group := range [][]*Node{brokers, controllers} {
		var wg sync.WaitGroup
		for _, n := range group {
			wg.Go(n.stop)
		}
		wg.Wait()
	}
}

// Dir is the cluster's directory.
func (c *Cluster) Dir() string { return c.dir }

// Config is the cluster's configuration as it runs now (defaults filled,
// the RLMM of the last restart).
func (c *Cluster) Config() Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cfg
}

// Nodes are the cluster's nodes, node 1 first.
func (c *Cluster) Nodes() []*Node { return c.nodes }

// Node returns node id (1-based); it panics on an id out of range, a bug
// of the test.
func (c *Cluster) Node(id int) *Node {
	if id < 1 || id > len(c.nodes) {
		panic(fmt.Sprintf("kafkatest: node %d of a %d-node cluster", id, len(c.nodes)))
	}
	return c.nodes[id-1]
}

// Bootstrap are the advertised PLAINTEXT addresses, node 1 first.
func (c *Cluster) Bootstrap() []string { return c.addrs(ListenerPlaintext) }

// SecureBootstrap are the advertised addresses of the secure listener
// (nil without one).
func (c *Cluster) SecureBootstrap() []string {
	if !c.cfg.Security.secure() {
		return nil
	}
	return c.addrs(ListenerSecure)
}

func (c *Cluster) addrs(listener string) []string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, n.layout.Listeners[listener].Advertised)
	}
	return out
}

// Security is the cluster's TLS material and SASL users (nil for
// Plaintext).
func (c *Cluster) Security() *SecurityFiles { return c.security }

// RemoteDir is the root the file-system RSMs share ("" unless tiered).
func (c *Cluster) RemoteDir() string {
	if !c.cfg.Tiered {
		return ""
	}
	return filepath.Join(c.dir, "tiered")
}

// StartNode starts node id on its data (after StopNode or Kill).
func (c *Cluster) StartNode(ctx context.Context, id int) error {
	return c.startNodes(ctx, []*Node{c.Node(id)})
}

// StopNode stops node id: SIGTERM, SIGKILL after Config.StopTimeout.
func (c *Cluster) StopNode(id int) { c.stopNodes([]*Node{c.Node(id)}) }

// RestartOption changes a cluster's settings at a restart.
type RestartOption func(*Config)

// WithRLMM switches the RLMM of a tiered cluster: the restarted nodes come
// back on their data with rlmm's plugin or Kafka's own manager.
func WithRLMM(r RLMM) RestartOption { return func(c *Config) { c.RLMM = r } }

// WithExtra replaces Config.Extra, the lines added to every node's
// server.properties.
func WithExtra(extra string) RestartOption { return func(c *Config) { c.Extra = extra } }

// Restart stops every node, applies opts, and starts them again on their
// data and ports.
func (c *Cluster) Restart(ctx context.Context, opts ...RestartOption) error {
	return c.restart(ctx, c.nodes, opts)
}

// RestartNode restarts node id alone; the options apply to the nodes
// started from then on (the others keep their running settings until
// their own restart).
func (c *Cluster) RestartNode(ctx context.Context, id int, opts ...RestartOption) error {
	return c.restart(ctx, []*Node{c.Node(id)}, opts)
}

func (c *Cluster) restart(ctx context.Context, nodes []*Node, opts []RestartOption) error {
	c.stopNodes(nodes)
	cfg := c.Config()
	for _, o := range opts {
		o(&cfg)
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return fmt.Errorf("kafkatest: restart: %w", err)
	}
	c.mu.Lock()
	c.cfg = cfg
	c.mu.Unlock()
	if cfg.Tiered {
		if err := c.resolveRLMM(ctx); err != nil {
			return err
		}
	}
	if err := c.writeRecord(); err != nil {
		return err
	}
	return c.startNodes(ctx, nodes)
}

// Stop stops every node (broker-only first) and the rest of each node's
// process group, and waits until all are gone. The data stays; a Cluster
// from Open can be started again by Restart.
func (c *Cluster) Stop() { c.stopNodes(c.nodes) }

// PIDs are the live processes of every node's group (the broker JVMs and
// their children): empty once Stop returned.
func (c *Cluster) PIDs() []int {
	var out []int
	for _, n := range c.nodes {
		out = append(out, n.GroupPIDs()...)
	}
	return out
}

// Running reports whether every node's JVM runs.
func (c *Cluster) Running() bool {
	for _, n := range c.nodes {
		if !n.Running() {
			return false
		}
	}
	return true
}

// Ready checks, within d, that every running node answers; an error names
// the first that does not.
func (c *Cluster) Ready(ctx context.Context, d time.Duration) error {
	var errs []error
	for _, n := range c.nodes {
		if !n.Running() {
			errs = append(errs, fmt.Errorf("node %d is not running", n.ID()))
			continue
		}
		attempt, cancel := context.WithTimeout(ctx, d)
		err := listsNode(attempt, n.layout.Listeners[ListenerPlaintext].Advertised, int32(n.ID()))
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", n.ID(), err))
		}
	}
	return errors.Join(errs...)
}

// LogTails writes the last lines of every node's broker.log and
// broker.out, and of any sidecar log under its directory, to w.
func (c *Cluster) LogTails(w io.Writer, lines int) {
	for _, n := range c.nodes {
		_ = filepath.WalkDir(n.Dir(), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			name := d.Name()
			sidecar := strings.Contains(name, "serve") && (strings.HasSuffix(name, ".log") || strings.HasSuffix(name, ".err"))
			if name != "broker.log" && name != "broker.out" && !sidecar {
				return nil
			}
			_, _ = fmt.Fprintf(w, "--- node %d: the end of %s\n%s\n", n.ID(), path, fileTail(path, lines))
			return nil
		})
	}
}
