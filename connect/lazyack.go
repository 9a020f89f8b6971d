package connect

// LazyAcker is implemented by a source that does not need its positions
// stored promptly: it answers its clients on Durable (DurableNotifier), so
// nobody waits for Ack, and a position stored within the worker's normal
// position interval (at most a fraction of a second later) is enough.
//
// By default the worker stores a source's position and calls Ack as soon
// as the batch is durable and no other batch is waiting, because a source
// may answer its clients on Ack. That costs one more durable write (the
// offsets topic) per commit. For a source whose AcksLazily returns true,
// the worker skips that eager store while it calls the source's Durable,
// and stores the newest position at most once per interval instead (and
// always before the task stops). Until Durable is called (see "Which
// workers call it" on DurableNotifier), positions are stored promptly as
// usual, since the source then answers on Ack.
//
// AcksLazily is called once, after Open; a source whose answer depends on
// its configuration (the HTTP tracking source acks lazily only with dedup
// on) answers from the configuration Open read. Lazy acks never weaken
// delivery: a crash before the store leaves records read again from the
// older position, as always.
type LazyAcker interface {
	AcksLazily() bool
}
