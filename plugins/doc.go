// Package plugins runs connectors out of process: a connector shipped as
// its own program, built in its own repository, runs under the worker as a
// built-in one does, over gRPC with hashicorp/go-plugin. It is only an
// adapter: plugin authors write a connect.Source or connect.Sink, and the
// worker sees a connect.Connector in its registry.
//
// # Author side
//
// A plugin's main calls Serve with its connect.Connector (name, kind,
// version, description, spec, factory) and nothing else:
//
//	func main() { plugins.Serve(counter.Connector()) }
//
// # Host side
//
// A Host finds plugins with Discover (every file of the plugin
// directories) or Inspect (one file): it starts each, completes the
// handshake, asks it for its name, kind, version and spec (Describe), and
// stops it. A file that is not a usable plugin comes back with Plugin.Err
// saying why. Plugin.Connector returns a connect.Connector whose NewSource
// or NewSink makes an instance that starts a plugin process of its own in
// Open and stops it in Close; Register puts the usable plugins into a
// connect.Registry, where the worker and pipeline validation use them
// exactly like built-ins.
//
// # Protocol
//
// The handshake negotiates the protocol version: host and plugin each
// offer MinProtocolVersion to ProtocolVersion and go-plugin picks the
// highest in common, so plugins built for an older version keep running;
// a plugin with no version in common fails with an error naming both
// (ErrProtocolMismatch). The calls and messages are in
// internal/pluginpb/plugin.proto, which lists what each version added:
// Describe, Open, Read, Ack, Write, Flush, Report, Close (version 1),
// Durable and RecoverTail (version 2), Redact and Stop (version 3).
// Batches cross the boundary, never
// single records; nil and empty keys, values and positions stay distinct.
// A connector's error keeps its class (connect.BadRecordAt with its index,
// connect.Permanent, connect.Retryable with its delay, context errors) and
// the tries it counts (connect.WithAttempts). Permanent and the tries
// cross with any protocol version: a host older than them reads a
// permanent error as a plain one and ignores the tries.
//
// # Spec
//
// A plugin's connect.Spec reaches the host whole: its parameters with
// their constraints (Min, Max, Positive, Format, Exclusive) as data, so
// that pipeline validation, the REST validate endpoint and the worker's
// checks of what a connector holds alone treat it as a built-in's (a
// Format the host does not know is dropped, with a warning); and its
// Redact as a call. The host's Spec.Redact asks a plugin process that the
// Host keeps for that (started at the first value not asked before,
// ended a minute after its last call or by Host.Close), and remembers the
// answers; when the plugin cannot answer, the value shows as
// connect.Masked as a whole. Spec.Check stays in the plugin: its Open
// checks. Redact needs version 3 on both sides; with an older plugin the
// Spec has no Redact, as before.
//
// # Stop
//
// The stop the worker gives Sink.Write (connect.WithStop) reaches a
// plugin's Write in flight: when it ends, the host calls Stop, and the
// Write's connect.Stopping context ends in the plugin with
// connect.ErrStopping, which the host's Write returns as such. A sink
// that retries on its own stops retrying at a stop, delete or shutdown as
// in process, and its batch is not committed. It needs version 3 on both
// sides; with an older plugin a stop waits for the Write, as before.
//
// # Optional interfaces
//
// The instance a plugin's connector makes implements connect.Flusher,
// connect.Reporter, connect.DurableNotifier and connect.TailRecoverer
// exactly when the plugin's does: Serve announces them in Describe, and
// the host's instance, found by the worker with a type assertion, forwards
// their calls in the order the worker makes them. DurableNotifier and
// TailRecoverer need version 2 on both sides; a source's TailTopics
// travels with the answer to Open.
//
// # Isolation
//
// Each connector instance runs in its own process. Every call has a
// deadline (Options.CallTimeout; a Read's is Options.ReadWait more, since
// the plugin answers an idle Read with an empty batch after ReadWait). A
// call that fails because the process died or hangs kills the process and
// returns a *ProcessError with the plugin's last stderr lines: the task
// fails and the worker restarts it, which starts a new process; nothing
// else is affected. The plugin's stdout, stderr and slog lines go to the
// host's logger tagged plugin=<name>.
//
// # Trust
//
// A plugin file may be pinned to a sha256, in Options.Pins or in the
// directory's LockFile (sha256sum's format). go-plugin's SecureConfig
// checks it before every start, and a mismatch fails with an error naming
// both sums (ErrChecksumMismatch). Plugins run with the worker's user and
// environment: pinning says which programs may run, not what they may do.
package plugins
