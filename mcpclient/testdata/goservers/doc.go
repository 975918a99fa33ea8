// Package goservers holds MCP servers built with the two Go SDKs, for
// odek's interop tests: gosdk-server (github.com/modelcontextprotocol/go-sdk,
// over stdio or its Streamable HTTP handler) and mcpgo-server
// (github.com/mark3labs/mcp-go, over stdio). It is a module of its own so
// the SDKs never enter odek's go.mod; the tests build these programs with
// GOFLAGS=-mod=readonly and GOPROXY=off, so they never reach the network
// (the versions are pinned by this go.mod and go.sum).
package goservers
