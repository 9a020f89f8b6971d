// Package transform holds Tributary's single message transforms: small,
// chainable steps that change, reroute or drop records between a connector
// and the log, in the spirit of Kafka Connect's SMTs.
//
// A pipeline file lists a chain per source (applied before records are
// appended to the log) or per sink (applied before Write). Each entry is a
// mapping whose key "type" names the transform and whose other keys are its
// settings:
//
//	transforms:
//	  - type: unwrap
//	    add.fields: op,source.ts_ms
//	  - type: mask_fields
//	    fields: email,phone
//	    hash: sha256
//
// # Building
//
// A Registry holds the transforms by name, each a Definition: a
// description, a connect.Spec of its settings (for pipeline validation, the
// REST API and generated docs) and a constructor. Builtin returns a registry
// holding every built-in; Registry.New checks a configuration against the
// spec, fills in defaults and builds the transform. Its signature is the
// worker's transform factory, so the binary hands it to the engine as is
// (wrapped in a func literal, as Go function types must match exactly).
//
// # Values
//
// Transforms that read or change fields treat the record value as a JSON
// object, decoded with its field order kept and its numbers kept digit for
// digit, and re-encoded compactly. A value with an embedded Kafka Connect
// schema, {"schema":{…},"payload":{…}}, is worked on through its payload;
// a transform that changes the value writes the payload alone, without the
// schema, which would no longer describe it. Transforms that only read the
// value (filter, route, key_from_fields) leave its bytes untouched. Field
// paths are dotted (after.email, properties.amount) and go through nested
// objects, not arrays.
//
// A tombstone (a record with a nil value) passes through field transforms
// unchanged; filter, route and unwrap have rules of their own for it.
//
// # Errors
//
// A record that a transform cannot handle (a value that is not JSON where a
// field is needed, a field of the wrong type, a topic template that yields
// no valid topic name) makes Apply return an *Error, naming the transform
// and the field, marked with connect.BadRecord: the worker dead-letters the
// record or fails the task, as the pipeline's error tolerance says.
package transform
