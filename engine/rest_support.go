package engine

// TransformFactory returns the factory the worker builds transforms with
// (nil when the worker has none), so that the REST API can refuse a
// connector config with an unknown transform or setting before it starts.
func (w *Worker) TransformFactory() TransformFactory { return w.opts.Transforms }
