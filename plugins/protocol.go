package plugins

import (
	"context"
	"fmt"
	"math"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/tributary-io/tributary/plugins/internal/pluginpb"
)

// ProtocolVersion is the newest version of the plugin protocol this
// package speaks, sent in go-plugin's handshake. It is raised when a change
// to the messages or calls (internal/pluginpb/plugin.proto) would break an
// older host or plugin, or adds a call; plugin.proto lists what each
// version added. A field that an older side may ignore, and that an older
// side never sends, is added without raising it (Error.Kind PERMANENT,
// Error.attempts and the constraints of Param; plugin.proto lists these
// too).
//
// A host and a plugin each offer every version from MinProtocolVersion to
// their ProtocolVersion, and go-plugin picks the highest both speak: a host
// runs plugins built for an older version (they are offered none of the
// newer calls), and a plugin runs under an older host. Only a plugin with
// no version in common fails, with ErrProtocolMismatch.
const ProtocolVersion = 3

// MinProtocolVersion is the oldest plugin protocol version this package
// still speaks.
const MinProtocolVersion = 1

// Protocol versions that added something a host must not use with a
// plugin of an older version.
const (
	// protocolSourceExtras: DescribeResponse.durable_notifier and
	// tail_recoverer, OpenRequest.tail_topics and OpenResponse.tail_topics,
	// and the calls Durable and RecoverTail (connect.DurableNotifier and
	// connect.TailRecoverer).
	protocolSourceExtras = 2
	// protocolRedactStop: DescribeResponse.redactor and the call Redact
	// (connect.Spec.Redact), WriteRequest.stop_id, the call Stop and
	// Error.Kind STOPPING (connect.WithStop and connect.Stopping).
	protocolRedactStop = 3
)

// The magic cookie tells a plugin that Tributary started it. It is not a
// security measure: it lets a plugin run by hand say what it is instead of
// waiting for a handshake.
const (
	MagicCookieKey   = "TRIBUTARY_PLUGIN_MAGIC_COOKIE"
	MagicCookieValue = "8c4e0b1d-tributary-connector-plugin"
)

// pluginKey is the name of the one plugin a plugin process serves, in
// go-plugin's PluginSet.
const pluginKey = "connector"

// maxMessage bounds one gRPC message (a batch) in both directions.
const maxMessage = math.MaxInt32

// handshake returns go-plugin's handshake for a protocol version.
func handshake(version uint) goplugin.HandshakeConfig {
	return goplugin.HandshakeConfig{
		ProtocolVersion:  version,
		MagicCookieKey:   MagicCookieKey,
		MagicCookieValue: MagicCookieValue,
	}
}

// versionedPlugins offers p under every protocol version from
// MinProtocolVersion to newest, for go-plugin's negotiation: the versions
// differ in which calls a side may make, not in how the plugin is served.
func versionedPlugins(p goplugin.Plugin, newest int) map[int]goplugin.PluginSet {
	vs := make(map[int]goplugin.PluginSet, newest-MinProtocolVersion+1)
	for v := MinProtocolVersion; v <= newest; v++ {
		vs[v] = goplugin.PluginSet{pluginKey: p}
	}
	return vs
}

// grpcPlugin is the go-plugin adapter: on the plugin side it registers the
// connector's gRPC server, on the host side it returns a client.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	server pluginpb.ConnectorServer // plugin side only
}

var _ goplugin.GRPCPlugin = (*grpcPlugin)(nil)

func (p *grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	if p.server == nil {
		return fmt.Errorf("plugin serves no connector")
	}
	pluginpb.RegisterConnectorServer(s, p.server)
	return nil
}

func (p *grpcPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pluginpb.NewConnectorClient(c), nil
}
