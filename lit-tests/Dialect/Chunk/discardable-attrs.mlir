// What one pass tells the next, beyond ops, is one of the chunk dialect's
// discardable attributes (the table in the dialect's description); the
// dialect refuses any other `chunk.` attribute, and a value of the wrong
// kind.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics

chunk.plan @unknown_attribute world_size(2) {
  // expected-error @below {{'chunk.stageing' is not an attribute of the chunk dialect}}
  chunk.buffer @A : !chunk.buffer<4x4xf32> {chunk.stageing}
}

// -----

chunk.plan @attribute_kind world_size(2) {
  // expected-error @below {{'chunk.staged' must be an array of buffer names, not "A"}}
  chunk.buffer @A : !chunk.buffer<4x4xf32> {chunk.staged = "A"}
}

// -----

// The typed records are structured attributes, not text.
// expected-error @below {{'chunk.host_schedule' must be a dictionary (a typed record), not "{\22plan\22:\22p\22}"}}
module attributes {chunk.host_schedule = "{\22plan\22:\22p\22}"} {
}

// -----

// expected-error @below {{'chunk.reduction_copies' must be an array (a typed record), not {bytes = 256 : i64}}}
chunk.plan @copies_not_per_rank world_size(2) attributes {chunk.reduction_copies = {bytes = 256 : i64}} {
}
