package pipelines_test

import (
	"errors"
	"fmt"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/pipelines"
)

// catalog stands in for the engine's registry of connectors and transforms.
var catalog = pipelines.Specs{
	pipelines.KindSource: {"generator": {Params: []connect.Param{
		{Name: "rate", Type: connect.TypeInt, Default: "100", Description: "events per second"},
	}}},
	pipelines.KindSink: {"file": {Params: []connect.Param{
		{Name: "path", Type: connect.TypeString, Required: true, Description: "the file to append to"},
		{Name: "token", Type: connect.TypeString, Secret: true, Description: "an upload token"},
	}}},
}

func env(name string) (string, bool) {
	if name == "TOKEN" {
		return "t0p-s3cret", true
	}
	return "", false
}

func ExampleParse() {
	p, err := pipelines.Parse("quickstart.yaml", []byte(`
version: 1
sources:
  - name: web-events
    connector: generator
    topic: web.tracking
    config: {rate: 1000}
sinks:
  - name: events-file
    connector: file
    topics: [web.tracking]
    config:
      path: ./data/out/events.jsonl
      token: ${TOKEN}
`), pipelines.Options{Catalog: catalog, LookupEnv: env})
	if err != nil {
		fmt.Println(err)
		return
	}
	sink := p.Sinks[0]
	fmt.Println(p.Name, p.Log.Backend, p.Log.Dir)
	fmt.Println(sink.Name, "reads", sink.Topics, "as group", sink.Group)
	fmt.Println("masked:", p.Masked().Sinks[0].Config["token"])
	// Output:
	// quickstart embedded ./data
	// events-file reads [web.tracking] as group events-file
	// masked: ********
}

func ExampleParse_errors() {
	_, err := pipelines.Parse("quickstart.yaml", []byte(`
version: 1
sources:
  - name: web-events
    connector: generatr
    topic: web.tracking
sinks:
  - name: events-file
    connector: file
    topic: [web.tracking]
`), pipelines.Options{Catalog: catalog, LookupEnv: env})
	fmt.Println(err)

	var list pipelines.ErrorList
	if errors.As(err, &list) {
		fmt.Println(len(list), "problems; the first at line", list[0].Line, "column", list[0].Column)
	}
	// Output:
	// quickstart.yaml:5:16: sources[0].connector: unknown source connector "generatr"; did you mean "generator"? valid source connectors: generator
	// quickstart.yaml:8:5: sinks[0]: missing required key "topics" (or "topics_regex") in a sink; e.g. topics: [web.tracking]
	// quickstart.yaml:9:16: sinks[0].config: missing required setting "path" of sink connector "file"; path: the file to append to (string)
	// quickstart.yaml:10:5: sinks[0].topic: unknown key "topic" in a sink; did you mean "topics"? valid keys: name, connector, topics, topics_regex, group, tasks, config, transforms, errors
	// 4 problems; the first at line 5 column 16
}
