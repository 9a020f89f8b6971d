// Command jsonl is an example Tributary plugin: a sink connector that
// appends each record's value as one line to a file, fsync'ed before Write
// returns.
//
// Build it into a plugin directory and name it in a pipeline as
// "connector: jsonl" (see ../README.md).
package main

import "github.com/tributary-io/tributary/plugins"

func main() { plugins.Serve(Connector()) }
