package server

import "time"

// APIVersion is the version of the broker frames (rpc/brokerframe, messages
// of proto/rlmm/v1/rlmm.proto) this server speaks: the version byte of
// every hello and its answer, and ServerInfo's api_version. It changes
// when a change of the protocol would make a client built for the previous
// version misread or miss an answer (a field's meaning, a call the client
// relies on); a new optional field or call does not change it. The broker
// plugin checks it on every server it reaches, before any call goes through,
// and refuses a server of another version naming both (the plugin's own is
// RlmmRemoteLogMetadataManager.API_VERSION, which must equal this).
//
// Version 0 is a server older than the field (it answers no api_version).
const APIVersion = 1

// processStarted is when this process started serving (ServerInfo's
// started_unix_ms): with the pid it tells a client reconnecting to the same
// address that the server there is a new one.
var processStarted = time.Now()
