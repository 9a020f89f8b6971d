// Command counter is an example Tributary plugin: a source connector that
// emits {"n": 1}, {"n": 2}, … at a configurable rate. n is the record's
// source position, so after a restart the source continues after the last
// n the worker stored.
//
// The connector is package counter; this main only serves it. Build it into
// a plugin directory and name it in a pipeline as "connector: counter"
// (see ../README.md).
package main

import (
	"github.com/tributary-io/tributary/examples/plugins/counter/counter"
	"github.com/tributary-io/tributary/plugins"
)

func main() { plugins.Serve(counter.Connector()) }
