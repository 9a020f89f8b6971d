// Command oldproto is a plugin for the plugins package's tests that speaks
// plugin protocol version 1 only, as a plugin built before version 2 does:
// its handshake offers version 1, its Describe names no version-2
// capability and it has none of the version-2 calls (they answer
// Unimplemented, as the generated code of an older plugin does for a call
// it does not know). It serves a counting source, "oldcounter", that
// writes each Ack to the file its "acks" setting names, one line each.
//
// It is written against the wire messages rather than with plugins.Serve,
// which speaks the newest version: a test of the host's compatibility
// needs a plugin that cannot.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tributary-io/tributary/plugins"
	"github.com/tributary-io/tributary/plugins/internal/pluginpb"
)

func main() {
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: goplugin.HandshakeConfig{ProtocolVersion: 1,
			MagicCookieKey: plugins.MagicCookieKey, MagicCookieValue: plugins.MagicCookieValue},
		Plugins:    goplugin.PluginSet{"connector": &connector{}},
		GRPCServer: goplugin.DefaultGRPCServer,
	})
}

type connector struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (connector) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pluginpb.RegisterConnectorServer(s, &server{})
	return nil
}

func (connector) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, fmt.Errorf("a plugin has no client")
}

// server is a version-1 source: Describe, Open, Read, Ack, Report, Close.
// The embedded UnimplementedConnectorServer answers every other call.
type server struct {
	pluginpb.UnimplementedConnectorServer

	mu   sync.Mutex // guards the fields below
	next int64
	acks *os.File
}

func (s *server) Describe(context.Context, *pluginpb.DescribeRequest) (*pluginpb.DescribeResponse, error) {
	return &pluginpb.DescribeResponse{
		Name: "oldcounter", Kind: "source", Version: "0.0.1", Description: "A counting source of plugin protocol version 1.",
		Params:   []*pluginpb.Param{{Name: "acks", Type: "string", Required: true, Description: "The file each Ack is appended to."}},
		Protocol: 1,
	}, nil
}

func (s *server) Open(_ context.Context, req *pluginpb.OpenRequest) (*pluginpb.OpenResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.Kind != "source" {
		return nil, status.Errorf(codes.InvalidArgument, "oldcounter is a source, not a %s", req.Kind)
	}
	s.next = 1
	if p := req.GetConfig().GetPosition(); p != nil {
		n, err := strconv.ParseInt(string(p), 10, 64)
		if err != nil {
			return &pluginpb.OpenResponse{Error: &pluginpb.Error{Message: fmt.Sprintf("stored position %q: %v", p, err), Index: -1}}, nil
		}
		s.next = n + 1
	}
	f, err := os.OpenFile(req.GetConfig().GetValues()["acks"], os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return &pluginpb.OpenResponse{Error: &pluginpb.Error{Message: fmt.Sprintf("open the acks file: %v", err), Index: -1}}, nil
	}
	s.acks = f
	return &pluginpb.OpenResponse{}, nil
}

func (s *server) Read(ctx context.Context, _ *pluginpb.ReadRequest) (*pluginpb.ReadResponse, error) {
	select {
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	case <-time.After(5 * time.Millisecond):
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	recs := make([]*pluginpb.Record, 2)
	for i := range recs {
		recs[i] = &pluginpb.Record{Value: []byte(strconv.FormatInt(s.next, 10))}
		s.next++
	}
	recs[1].Position = recs[1].Value
	return &pluginpb.ReadResponse{Records: recs}, nil
}

func (s *server) Ack(_ context.Context, req *pluginpb.AckRequest) (*pluginpb.AckResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := fmt.Fprintf(s.acks, "ack %s\n", req.Position); err != nil {
		return &pluginpb.AckResponse{Error: &pluginpb.Error{Message: fmt.Sprintf("write the acks file: %v", err), Index: -1}}, nil
	}
	return &pluginpb.AckResponse{}, nil
}

func (s *server) Report(context.Context, *pluginpb.ReportRequest) (*pluginpb.ReportResponse, error) {
	return &pluginpb.ReportResponse{}, nil
}

func (s *server) Close(context.Context, *pluginpb.CloseRequest) (*pluginpb.CloseResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.acks != nil {
		if err := s.acks.Close(); err != nil {
			return &pluginpb.CloseResponse{Error: &pluginpb.Error{Message: err.Error(), Index: -1}}, nil
		}
		s.acks = nil
	}
	return &pluginpb.CloseResponse{}, nil
}
