// Package pluginpb holds the gRPC messages and service of the plugin
// protocol, generated from plugin.proto. The generated files are committed:
// building needs no protoc.
package pluginpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative plugin.proto
