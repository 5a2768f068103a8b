// Package render turns an MCP tool call's answer into an Anthropic
// tool_result block, within a size limit: an oversized result is stored in
// S3 and referenced, or visibly truncated, never silently cut.
//
// Rationale for the mapping and the size rules: DESIGN.md.
package render
