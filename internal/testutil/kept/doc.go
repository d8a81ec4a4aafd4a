// Package kept tells whether an edit of a manifest kept every byte of it: the tests'
// one statement of inject's promise.
package kept
