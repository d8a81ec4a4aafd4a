// Package manifest reads Kubernetes manifests as their authors wrote them: YAML (one or
// more documents), JSON, concatenated JSON objects and kind: List, into objects that
// keep their file and line and their kyaml (yaml.v3) nodes, never decoded and
// re-encoded, so that an edit can keep comments, order and quoting. What Kubernetes
// would not read the same way is an error at its line: a duplicate key, an alias to
// another document, bytes that are not text.
package manifest
