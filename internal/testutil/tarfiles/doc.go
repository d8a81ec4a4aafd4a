// Package tarfiles reads tarballs in tests: an OCI layout's files, an image layer's
// entries, by name.
package tarfiles
