package kept

import "regexp"

// graceValue is the one value inject may rewrite in place: a grace period too short.
var graceValue = regexp.MustCompile(`(terminationGracePeriodSeconds"?\s*:\s*)\d+`)

// Bytes tells whether every byte of src is still in out, in order (src is a
// subsequence of out), once grace period values are masked in both.
func Bytes(src, out []byte) bool {
	small := graceValue.ReplaceAll(src, []byte("${1}#"))
	big := graceValue.ReplaceAll(out, []byte("${1}#"))
	j := 0
	for i := 0; i < len(big) && j < len(small); i++ {
		if big[i] == small[j] {
			j++
		}
	}
	return j == len(small)
}
