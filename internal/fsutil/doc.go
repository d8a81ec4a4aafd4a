// Package fsutil holds the file-system helpers that nap's commands and tools share.
package fsutil
