// Package schema judges the JSON Schemas a tool lists, so that only ones a
// model request can carry reach the catalog. [Check] takes one input or
// output schema as the server sent it (compact bytes) and returns nil or
// an error wrapping [ErrRefused] that starts with the rule it broke. It
// never alters the bytes, never fetches, and holds no state; a [Cache]
// remembers its verdicts per schema hash on a warm instance.
package schema
