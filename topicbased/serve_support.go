package topicbased

// Closed reports whether the manager was closed (Close or
// ShutdownAndFlush): rlmm serve's /healthz.
func (m *Manager) Closed() bool { return m.closed.Load() }
