package plugins

// BuiltPlugin returns the path of a plugin TestMain built: "counter",
// "jsonl", "misbehave", "recorder" or "oldproto", for the tests of package
// plugins_test.
func BuiltPlugin(name string) string {
	switch name {
	case "counter":
		return bin.counter
	case "jsonl":
		return bin.jsonl
	case "misbehave":
		return bin.misbehave
	case "recorder":
		return bin.recorder
	case "oldproto":
		return bin.oldproto
	}
	panic("no test plugin " + name)
}
