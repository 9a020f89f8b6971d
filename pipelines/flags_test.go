package pipelines

import "flag"

var update = flag.Bool("update", false, "rewrite the golden files in testdata")
