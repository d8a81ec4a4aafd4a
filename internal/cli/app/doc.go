// Package app assembles napctl's command tree and runs it. Only cmd/napctl's main exits.
package app
