// Command misbehave is a plugin for the plugins package's tests: a sink
// whose Write hangs, crashes, fails or works, as its "mode" setting says. With
// TRIBUTARY_TEST_PROTOCOL set, it completes the handshake with that
// protocol version instead, as a plugin built for another version would.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/plugins"
)

func main() {
	if v := os.Getenv("TRIBUTARY_TEST_PROTOCOL"); v != "" {
		n, _ := strconv.Atoi(v)
		goplugin.Serve(&goplugin.ServeConfig{
			HandshakeConfig: goplugin.HandshakeConfig{ProtocolVersion: uint(n),
				MagicCookieKey: plugins.MagicCookieKey, MagicCookieValue: plugins.MagicCookieValue},
			Plugins:    goplugin.PluginSet{"connector": nothing{}},
			GRPCServer: goplugin.DefaultGRPCServer,
		})
		return
	}
	plugins.Serve(connect.Connector{
		Name: "misbehave", Kind: connect.KindSink, Version: "0.0.1",
		Description: "A sink that hangs or crashes on demand.",
		Spec: connect.Spec{Params: []connect.Param{
			{Name: "mode", Type: connect.TypeString, Enum: []string{"ok", "hang", "crash", "permanent", "gaveup"}, Default: "ok",
				Description: "What Write does: permanent fails with an error marked Permanent (and Retryable, which Permanent overrides) after 2 tries; gaveup fails the first record after 4 tries."},
		}},
		NewSink: func() connect.Sink { return &sink{} },
	})
}

type nothing struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (nothing) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error { return nil }
func (nothing) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, nil
}

type sink struct{ mode string }

func (s *sink) Open(_ context.Context, cfg connect.Config) error {
	mode, err := cfg.String("mode")
	if err != nil {
		return err
	}
	s.mode = mode
	fmt.Println("hello on stdout")
	fmt.Fprintln(os.Stderr, "hello on stderr")
	slog.Info("opened", "mode", mode)
	return nil
}

func (s *sink) Write(_ context.Context, recs []connect.Record) error {
	switch s.mode {
	case "hang":
		slog.Warn("hanging now, ignoring the context")
		select {}
	case "crash":
		panic(fmt.Sprintf("boom after %d records", len(recs)))
	case "permanent":
		return connect.Permanent(connect.WithAttempts(2, connect.Retryable(errors.New("role tributary lacks the grant"))))
	case "gaveup":
		return connect.BadRecordAt(0, connect.WithAttempts(4, errors.New("gave up after 4 attempts")))
	}
	return nil
}

func (s *sink) Close(context.Context) error { return nil }
