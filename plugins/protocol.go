package plugins

import (
	"context"
	"fmt"
	"math"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/tributary-io/tributary/plugins/internal/pluginpb"
)

// ProtocolVersion is the version of the plugin protocol this package
// speaks, sent in go-plugin's handshake. A host runs only plugins built for
// the same version; it is raised when a change to the messages or calls
// (internal/pluginpb/plugin.proto) would break an older host or plugin.
const ProtocolVersion = 1

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
