// Command jsonl is an example Tributary plugin: a sink connector that
// appends each record's value as one line to a file, fsync'ed before Write
// returns.
//
// The connector is package jsonl; this main only serves it. Build it into a
// plugin directory and name it in a pipeline as "connector: jsonl" (see
// ../README.md).
package main

import (
	"github.com/tributary-io/tributary/examples/plugins/jsonl/jsonl"
	"github.com/tributary-io/tributary/plugins"
)

func main() { plugins.Serve(jsonl.Connector()) }
